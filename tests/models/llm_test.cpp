// LLM text encoder: a tiny random Qwen3 (3 blocks, grouped-query attention with 4 query / 2
// key-value heads of head_dim 128 != width / heads, q/k norms) and a tiny Qwen2 (q/k/v biases)
// against an independent float64 numpy computation (tests/models/llm_reference.py), final-normed
// and selected hidden layers; Hugging Face, nested, ComfyUI and llama.cpp GGUF names; GGUF
// files in the quantized types users download against the f32 model; bad files.
#include "models/llm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "io/tensor_writer.h"
#include "ops/convert.h"
#include "test_util.h"

namespace sd {
namespace {

// The reference files (about 50 MB), made once per test program and removed when it exits.
const std::string& reference_dir() {
    struct Dir {
        std::string path = test::temp_path("llm_reference");
        Dir() {
            test::run_or_fail("rm -rf " + path + " && mkdir -p " + path + " && /usr/bin/python3 " +
                              test::tests_source_dir() + "/models/llm_reference.py " + path);
        }
        ~Dir() { std::filesystem::remove_all(path); }
    };
    static const Dir dir;
    return dir.path;
}

std::string ref(const std::string& file) {
    return reference_dir() + "/" + file;
}

// A tensor of expected.safetensors.
Tensor expected(const std::string& name) {
    static const TensorFile file = open_tensor_file(ref("expected.safetensors"));
    const TensorRecord* r = file.find(name);
    if (!r) fail("expected.safetensors has no '%s'", name.c_str());
    return r->load();
}

const std::vector<int32_t>& ids() {
    static const std::vector<int32_t> v = [] {
        std::vector<int32_t> out;
        for (float id : expected("ids").to_vector()) out.push_back(static_cast<int32_t>(id));
        return out;
    }();
    return v;
}

Llm load(const std::string& path, const LlmOptions& options = {},
         Residency residency = Residency::Resident, ModelRole role = ModelRole::Llm) {
    ModelFiles files;
    files.add(path, role);
    LlmOptions o = llm_options(files);
    if (options.head_dim) o.head_dim = options.head_dim;
    if (options.rope_theta > 0) o.rope_theta = options.rope_theta;
    if (options.rope_layout != RopeLayout::HalfSplit) o.rope_layout = options.rope_layout;
    if (options.eps > 0) o.eps = options.eps;
    return Llm::load(Weights(files, canonical_prefix(ModelRole::Llm), residency), o);
}

// max |got - want| over the largest |want| (the figure the 1e-4 bound is on).
double relative_max_error(const Tensor& got, const std::string& name, int64_t width) {
    const Tensor want = expected(name);
    const auto n = static_cast<int64_t>(ids().size());
    EXPECT_EQ(got.shape(), (Shape{1, n, width})) << name;
    if (got.shape() != Shape{1, n, width}) return INFINITY;
    const test::Diff d = test::compare(got, want.view({1, n, width}));
    double scale = 0;
    for (float x : want.to_vector()) scale = std::max(scale, static_cast<double>(std::fabs(x)));
    return d.max_abs / scale;
}

void expect_final_matches(const Llm& llm, const std::string& expected = "q3_final") {
    EXPECT_LT(relative_max_error(llm.forward(ids()), expected, llm.width()), 1e-4);
}

TEST(Llm, Qwen3MatchesNumpyReference) {
    const Llm llm = load(ref("qwen3.safetensors"));
    const LlmConfig& c = llm.config();
    EXPECT_EQ(c.layers, 3);
    EXPECT_EQ(c.width, 256);
    EXPECT_EQ(c.heads, 4);
    EXPECT_EQ(c.kv_heads, 2);
    EXPECT_EQ(c.head_dim, 128);
    EXPECT_EQ(c.ffn, 512);
    EXPECT_EQ(c.vocab, 300);
    EXPECT_TRUE(c.qk_norm);
    EXPECT_FALSE(c.qkv_bias);
    const double final_err = relative_max_error(llm.forward(ids()), "q3_final", 256);
    const std::vector<int> l12 = {2, 1}, l24 = {4, 2, 2};
    const double err12 = relative_max_error(llm.forward(ids(), l12), "q3_layers_1_2", 512);
    const double err24 = relative_max_error(llm.forward(ids(), l24), "q3_layers_2_4", 512);
    std::printf(
        "Qwen3 tiny vs float64 numpy, max |error| / max |value|: final %.2e, layers "
        "{1,2} %.2e, {2,4} %.2e\n",
        final_err, err12, err24);
    EXPECT_LT(final_err, 1e-4);
    EXPECT_LT(err12, 1e-4);
    EXPECT_LT(err24, 1e-4);
}

TEST(Llm, LayersTheFileLacksGiveTheFinalNormedOutput) {
    // Z-Image asks for layer 35 and FLUX.2-klein for {9, 18, 27}: a 3-block file has none,
    // and the reference then returns the final-normed output.
    const Llm llm = load(ref("qwen3.safetensors"));
    for (const std::vector<int>& layers :
         {std::vector<int>{35}, std::vector<int>{9, 18, 27}, std::vector<int>{0, -1}})
        EXPECT_LT(relative_max_error(llm.forward(ids(), layers), "q3_final", 256), 1e-4);
    // The layers it has are kept, the others skipped: {2, 9} is layer 2 alone.
    const Tensor two = llm.forward(ids(), std::vector<int>{2, 9});
    const Tensor both = llm.forward(ids(), std::vector<int>{1, 2});
    EXPECT_EQ(two.shape(), (Shape{1, 40, 256}));
    const test::Diff d = test::compare(two, both.narrow(2, 256, 256).contiguous());
    EXPECT_EQ(d.max_abs, 0.0);
}

TEST(Llm, PaddingKeysAreMasked) {
    const Llm llm = load(ref("qwen3.safetensors"));
    std::vector<float> mask(ids().size(), 1.0f);
    std::fill(mask.end() - 8, mask.end(), 0.0f);
    LlmInput input;
    input.key_mask = mask;
    EXPECT_LT(relative_max_error(llm.forward(ids(), {}, input), "q3_masked", 256), 1e-4);
    // Positions 0..n-1 given explicitly are the default.
    std::vector<int32_t> positions(ids().size());
    for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i);
    LlmInput at;
    at.positions = positions;
    EXPECT_LT(relative_max_error(llm.forward(ids(), {}, at), "q3_final", 256), 1e-4);
}

TEST(Llm, NameForms) {
    // model.language_model.* (newer transformers), llama.cpp's GGUF names, ComfyUI's prefix.
    const std::vector<int> l12 = {1, 2};
    for (const char* file :
         {"qwen3_nested.safetensors", "qwen3_llama.safetensors", "qwen3_comfy.safetensors"}) {
        const Llm llm = load(ref(file));
        expect_final_matches(llm);
        EXPECT_LT(relative_max_error(llm.forward(ids(), l12), "q3_layers_1_2", 512), 1e-4) << file;
    }
    // ComfyUI's prefixes in an all-in-one (-m) file.
    for (const char* file : {"qwen3_comfy.safetensors", "qwen3_comfy_short.safetensors"})
        expect_final_matches(load(ref(file), {}, Residency::Resident, ModelRole::Checkpoint));
}

TEST(Llm, Qwen2WithBiasesMatchesNumpyReference) {
    LlmOptions o;
    o.head_dim = 16;
    o.rope_theta = 1e4f;
    const Llm llm = load(ref("qwen2.safetensors"), o);
    EXPECT_TRUE(llm.config().qkv_bias);
    EXPECT_FALSE(llm.config().qk_norm);
    EXPECT_EQ(llm.config().heads, 4);
    EXPECT_EQ(llm.config().kv_heads, 2);
    const double final_err = relative_max_error(llm.forward(ids()), "q2_final", 64);
    const double layer_err =
        relative_max_error(llm.forward(ids(), std::vector<int>{2}), "q2_layer_2", 64);
    std::printf("Qwen2 tiny vs float64 numpy: final %.2e, layer 2 %.2e\n", final_err, layer_err);
    EXPECT_LT(final_err, 1e-4);
    EXPECT_LT(layer_err, 1e-4);
    // q/k rows permuted as llama.cpp does for llama models, rotated in interleaved pairs.
    o.rope_layout = RopeLayout::Interleaved;
    expect_final_matches(load(ref("qwen2_interleaved.safetensors"), o), "q2_final");
}

// FLUX.2-dev's Mistral-Small-3.2 form: eps 1e-5 and theta 1e9 as the family passes them (an
// HF file has no metadata), head_dim 32 != width / heads; Hugging Face names with rotate_half
// pairs and llama.cpp's GGUF names with permuted rows and interleaved pairs; the three block
// outputs FLUX.2-dev takes (its 10, 20, 30) side by side.
TEST(Llm, MistralMatchesNumpyReference) {
    LlmOptions o;
    o.head_dim = 32;
    o.rope_theta = 1e9f;
    o.eps = 1e-5f;
    const Llm llm = load(ref("mistral.safetensors"), o);
    EXPECT_FALSE(llm.config().qkv_bias);
    EXPECT_FALSE(llm.config().qk_norm);
    EXPECT_EQ(llm.config().heads, 4);
    EXPECT_EQ(llm.config().kv_heads, 2);
    EXPECT_FLOAT_EQ(llm.config().eps, 1e-5f);
    const std::vector<int> layers = {1, 2, 3};
    const double final_err = relative_max_error(llm.forward(ids()), "m_final", 64);
    const double layers_err = relative_max_error(llm.forward(ids(), layers), "m_layers_1_2_3", 192);
    std::printf("Mistral tiny vs float64 numpy: final %.2e, layers 1-3 %.2e\n", final_err,
                layers_err);
    EXPECT_LT(final_err, 1e-4);
    EXPECT_LT(layers_err, 1e-4);
    o.rope_layout = RopeLayout::Interleaved;
    const Llm gguf_named = load(ref("mistral_llama.safetensors"), o);
    EXPECT_LT(relative_max_error(gguf_named.forward(ids(), layers), "m_layers_1_2_3", 192), 1e-4);
}

// The records of `source` written as a GGUF file: matrices as `matrix_type` (`v_and_down`
// for attn_v and ffn_down, as Q4_K_M's mix), 1-D tensors f32, with `metadata`. With
// `dequantized`, the matrices are written back in f32 after the round trip through their type.
std::string write_gguf_copy(const std::string& source, const std::string& name, DType matrix_type,
                            DType v_and_down, const std::map<std::string, MetadataValue>& metadata,
                            bool dequantized = false) {
    const TensorFile f = open_tensor_file(source);
    std::vector<OutputTensor> out;
    for (const TensorRecord& r : f.tensors) {
        DType t = DType::F32;
        if (r.shape.size() == 2) {
            const bool mixed = r.name.find("attn_v.") != std::string::npos ||
                               r.name.find("ffn_down.") != std::string::npos;
            t = mixed ? v_and_down : matrix_type;
        }
        const DType stored = dequantized ? DType::F32 : t;
        out.push_back({r.name, stored, r.shape,
                       [r, t, stored] { return convert(convert(r.load(), t), stored); }});
    }
    const std::string path = test::temp_path(name);
    write_gguf(path, out, metadata);
    return path;
}

std::map<std::string, MetadataValue> qwen_metadata(const std::string& arch, int64_t heads,
                                                   int64_t kv, double theta) {
    return {{"general.architecture", MetadataValue{arch}},
            {arch + ".attention.head_count", MetadataValue{uint64_t(heads)}},
            {arch + ".attention.head_count_kv", MetadataValue{uint64_t(kv)}},
            {arch + ".rope.freq_base", MetadataValue{theta}},
            {arch + ".attention.layer_norm_rms_epsilon", MetadataValue{1e-6}}};
}

double relative_rms(const Tensor& got, const Tensor& want) {
    const std::vector<float> a = got.to_vector(), b = want.to_vector();
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        den += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(num / den);
}

TEST(Llm, QuantizedGgufAgainstItsF32Self) {
    const Llm f32 = load(ref("qwen3.safetensors"));
    const Tensor want = f32.forward(ids());
    const std::vector<int> layer2 = {2};
    const Tensor want2 = f32.forward(ids(), layer2);
    struct Case {
        const char* name;
        DType type, v_and_down;
        double bound;  // relative RMS of the final-normed output
    };
    // Bounds: 1.5x what this random model gives (a numpy simulation of Q8_0 rounding on it
    // gives the same 1.45%: each block adds its weights' rounding noise).
    const Case cases[] = {{"F32", DType::F32, DType::F32, 1e-6},
                          {"Q8_0", DType::Q8_0, DType::Q8_0, 0.025},
                          {"Q6_K", DType::Q6_K, DType::Q6_K, 0.075},
                          {"Q5_K", DType::Q5_K, DType::Q5_K, 0.15},
                          {"Q4_K", DType::Q4_K, DType::Q4_K, 0.3},
                          {"Q4_K_M mix (q4_K, q6_K)", DType::Q4_K, DType::Q6_K, 0.3},
                          {"IQ4_XS", DType::IQ4_XS, DType::IQ4_XS, 0.33}};
    const auto metadata = qwen_metadata("qwen3", 4, 2, 1e6);
    for (const Case& c : cases) {
        const std::string name = std::string("qwen3_") + c.name;
        const std::string path = write_gguf_copy(ref("qwen3_llama.safetensors"), name + ".gguf",
                                                 c.type, c.v_and_down, metadata);
        const Llm q = load(path);
        const double err = relative_rms(q.forward(ids()), want);
        const double err2 = relative_rms(q.forward(ids(), layer2), want2);
        // The same weights dequantized to f32: what the quantized kernels must compute.
        const std::string f32_path =
            write_gguf_copy(ref("qwen3_llama.safetensors"), name + "_f32.gguf", c.type,
                            c.v_and_down, metadata, /*dequantized=*/true);
        const double kernel_err = relative_rms(q.forward(ids()), load(f32_path).forward(ids()));
        std::printf(
            "Qwen3 tiny GGUF %-24s vs f32: relative RMS %.4f (final), %.4f (layer 2); "
            "vs its dequantized weights in f32 %.1e\n",
            c.name, err, err2, kernel_err);
        EXPECT_LT(err, c.bound) << c.name;
        EXPECT_LT(err2, c.bound) << c.name;
        EXPECT_LT(kernel_err, 1e-5) << c.name;
        std::remove(path.c_str());
        std::remove(f32_path.c_str());
    }
}

TEST(Llm, GgufMetadataGivesHeadsAndTheta) {
    // The Qwen2 as an f32 GGUF: heads and rope theta from qwen2.* metadata, no options.
    const std::string path =
        write_gguf_copy(ref("qwen2_interleaved.safetensors"), "qwen2_llama.gguf", DType::F32,
                        DType::F32, qwen_metadata("llama", 4, 2, 1e4));
    const Llm llm = load(path);
    EXPECT_EQ(llm.config().head_dim, 16);
    EXPECT_EQ(llm.config().rope_layout, RopeLayout::Interleaved);
    EXPECT_FLOAT_EQ(llm.config().rope_theta, 1e4f);
    expect_final_matches(llm, "q2_final");
    std::remove(path.c_str());
    // Metadata that contradicts the weights is named.
    const std::string wrong =
        write_gguf_copy(ref("qwen3_llama.safetensors"), "qwen3_wrong.gguf", DType::F32, DType::F32,
                        qwen_metadata("qwen3", 8, 2, 1e6));
    const std::string msg = test::error_of([&] { load(wrong); });
    EXPECT_NE(msg.find("metadata says 8 heads"), std::string::npos) << msg;
    std::remove(wrong.c_str());
}

TEST(Llm, OptionsFromMetadata) {
    const LlmOptions q = llm_options_from_metadata(qwen_metadata("qwen3", 32, 8, 1e6));
    EXPECT_EQ(q.heads, 32);
    EXPECT_EQ(q.kv_heads, 8);
    EXPECT_FLOAT_EQ(q.rope_theta, 1e6f);
    EXPECT_EQ(q.rope_layout, RopeLayout::HalfSplit);
    EXPECT_EQ(llm_options_from_metadata(qwen_metadata("llama", 32, 8, 1e9)).rope_layout,
              RopeLayout::Interleaved);
    const LlmOptions none = llm_options_from_metadata({});
    EXPECT_EQ(none.heads, 0);
    EXPECT_EQ(none.rope_theta, 0.0f);
}

TEST(Llm, ReleasedAndStreamedWeights) {
    const Llm llm = load(ref("qwen3.safetensors"));
    EXPECT_GT(llm.weight_pages().bytes(), 0u);
    llm.release_weights();
    expect_final_matches(llm);
    expect_final_matches(load(ref("qwen3.safetensors"), {}, Residency::Streamed));
}

TEST(Llm, WrongShapesAndMissingTensorsAreNamed) {
    const std::string msg = test::error_of([] { load(ref("qwen3_bad.safetensors")); });
    EXPECT_NE(msg.find("text_encoders.llm.model.layers.1.mlp.up_proj.weight"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("[512, 256]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("text_encoders.llm.model.layers.2.self_attn.k_norm.weight"),
              std::string::npos)
        << msg;
}

TEST(Llm, AnotherKindOfFileIsAClearError) {
    // A CLIP text encoder given as --llm.
    const std::string msg = test::error_of([] { load(ref("clip_like.safetensors")); });
    EXPECT_NE(msg.find("no LLM under 'text_encoders.llm.'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.embed_tokens.weight"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// A vision tower's embeddings spliced over tokens (Qwen-Image-Edit's image pads) are the LLM's
// input there: splicing the embedding rows of other ids is running on those ids; the tokens
// before the splice do not see it (causal attention).
TEST(Llm, SplicedEmbeddingsReplaceTheTokens) {
    const Llm llm = load(ref("qwen3.safetensors"));
    const TensorFile file = open_tensor_file(ref("qwen3.safetensors"));
    const Tensor table = convert(file.find("model.embed_tokens.weight")->load(), DType::F32);
    std::vector<int32_t> swapped = ids();
    const int32_t a = ids()[10], b = ids()[11];
    swapped[5] = a;
    swapped[6] = b;
    Tensor rows = Tensor::empty({1, 2, 256});
    std::copy_n(table.narrow(0, a, 1).contiguous().data<float>(), 256, rows.data<float>());
    std::copy_n(table.narrow(0, b, 1).contiguous().data<float>(), 256, rows.data<float>() + 256);
    const LlmEmbedSplice splice{5, rows};
    LlmInput input;
    input.splices = std::span(&splice, 1);
    const Tensor got = llm.forward(ids(), {}, input);
    EXPECT_LT(test::compare(got, llm.forward(swapped)).max_abs, 1e-6);
    const Tensor plain = llm.forward(ids());
    EXPECT_EQ(
        test::compare(got.narrow(1, 0, 5).contiguous(), plain.narrow(1, 0, 5).contiguous()).max_abs,
        0.0);
    EXPECT_GT(
        test::compare(got.narrow(1, 5, 1).contiguous(), plain.narrow(1, 5, 1).contiguous()).max_abs,
        1e-3);
    // Past the end, or of another width: an error naming it.
    const LlmEmbedSplice late{static_cast<int64_t>(ids().size()) - 1, rows};
    input.splices = std::span(&late, 1);
    EXPECT_NE(test::error_of([&] { llm.forward(ids(), {}, input); }).find("past the end"),
              std::string::npos);
    const LlmEmbedSplice narrow{0, Tensor::zeros({1, 2, 128})};
    input.splices = std::span(&narrow, 1);
    EXPECT_NE(test::error_of([&] { llm.forward(ids(), {}, input); }).find("f32 [1, k, 256]"),
              std::string::npos);
}

TEST(Llm, BadInputsAreErrors) {
    const Llm llm = load(ref("qwen3.safetensors"));
    EXPECT_NE(test::error_of([&] {
                  llm.forward(std::vector<int32_t>{1, 2, 300});
              }).find("300"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] { llm.forward(std::vector<int32_t>{}); }).find("no token ids"),
              std::string::npos);
    const std::vector<float> mask = {1.0f};
    LlmInput input;
    input.key_mask = mask;
    EXPECT_NE(test::error_of([&] { llm.forward(ids(), {}, input); }).find("1 mask values"),
              std::string::npos);
}

}  // namespace
}  // namespace sd
