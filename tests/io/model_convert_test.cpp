#include "io/model_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "base/cancel.h"
#include "cancel_after.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/tensor_writer.h"
#include "io_test_util.h"
#include "ops/convert.h"
#include "test_util.h"

namespace sd {
namespace {

// The families' keep lists, as the C API's convert passes them.
TypeChoice choice_of(std::optional<DType> type, TensorTypeRules rules = {}) {
    return {type, std::move(rules), convert_keeps()};
}

TEST(TensorTypeRules, ParseAndApply) {
    TensorTypeRules rules = parse_tensor_type_rules("^vae\\.=f16, model\\.=q8_0");
    ASSERT_EQ(rules.size(), 2u);
    EXPECT_EQ(rules[0].second, DType::F16);
    EXPECT_EQ(rules[1].second, DType::Q8_0);
    const TypeChoice q4 = choice_of(DType::Q4_0, rules);
    EXPECT_EQ(output_dtype("vae.decoder.conv_in.weight", {512, 4, 3, 3}, DType::F32, q4),
              DType::F16);
    EXPECT_EQ(output_dtype("model.diffusion_model.x.weight", {64, 64}, DType::F32, q4),
              DType::Q8_0);
    EXPECT_EQ(output_dtype("other.weight", {64, 64}, DType::F32, q4), DType::Q4_0);
    // What keeps its own dtype whatever the type, as the reference tool decides: biases,
    // scales, embeddings, the families' listed layers, rows that are not whole blocks.
    const TypeChoice q8 = choice_of(DType::Q8_0);
    EXPECT_EQ(output_dtype("a.bias", {64}, DType::F16, q8), DType::F16);
    EXPECT_EQ(output_dtype("a.norm.query_norm.scale", {128}, DType::BF16, q8), DType::BF16);
    EXPECT_EQ(output_dtype("a.conv.weight", {64, 64, 3, 3}, DType::F16, q8), DType::F16);
    EXPECT_EQ(output_dtype("x.token_embedding.weight", {49408, 768}, DType::F16, q8), DType::F16);
    EXPECT_EQ(output_dtype("model.diffusion_model.time_embed.0.weight", {1280, 320}, DType::F16,
                           choice_of(DType::Q4_K)),
              DType::F16);
    EXPECT_EQ(output_dtype("model.diffusion_model.x_embedder.proj.weight", {1536, 16, 2, 2},
                           DType::F16, choice_of(DType::F16)),
              DType::F16);
    // 1-D weights with whole blocks are converted like any other (the reference has no
    // exception for them; the loader reads them back as f32).
    EXPECT_EQ(output_dtype("a.norm.weight", {64}, DType::F16, q8), DType::Q8_0);
    EXPECT_EQ(output_dtype("a.norm.weight", {64}, DType::F16, choice_of(DType::Q4_K)), DType::F16);
    EXPECT_EQ(output_dtype("a.weight", {64, 64}, DType::F16, choice_of(std::nullopt)), DType::F16);
    EXPECT_EQ(output_dtype("a.weight", {64, 64}, DType::Q8_0, choice_of(DType::F16)), DType::F16);
    // A rule can ask for any type; the keep list still wins, as in the reference.
    EXPECT_EQ(output_dtype("model.diffusion_model.img_in.weight", {3072, 64}, DType::BF16,
                           choice_of(DType::F16, parse_tensor_type_rules("img_in=q8_0"))),
              DType::BF16);
    EXPECT_ERROR_CONTAINS(parse_tensor_type_rules("abc"), "PATTERN=TYPE");
    EXPECT_ERROR_CONTAINS(parse_tensor_type_rules("a=q9_9"), "unknown type");
    EXPECT_ERROR_CONTAINS(parse_tensor_type_rules("(=f16"), "regular expression");
}

struct ManifestTensor {
    std::string name;
    Shape shape;
};

// The tensors a fixture manifest lists (name, dtype, shape), names given `prefix`.
std::vector<ManifestTensor> manifest(const std::string& file, const std::string& prefix) {
    std::ifstream in(test::fixtures_dir() + "/manifests/" + file);
    EXPECT_TRUE(in.good()) << file;
    std::vector<ManifestTensor> out;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string name, dtype;
        fields >> name >> dtype;
        std::vector<int64_t> dims;
        for (int64_t d; fields >> d;) dims.push_back(d);
        out.push_back({prefix + name, Shape(dims)});
    }
    return out;
}

// The names of `tensors` that `type` converts (source bf16), and that every other keeps bf16.
std::set<std::string> converted(const std::vector<ManifestTensor>& tensors, DType type) {
    std::set<std::string> out;
    for (const ManifestTensor& t : tensors) {
        const DType d = output_dtype(t.name, t.shape, DType::BF16, choice_of(type));
        EXPECT_TRUE(d == type || d == DType::BF16) << t.name;
        if (d == type) out.insert(t.name);
    }
    return out;
}

// The FLUX DiT at q8_0/q4_K/q5_0: the reference converts exactly the weight matrices inside
// the blocks; biases, the q/k norm scales and img_in, txt_in, time_in, vector_in,
// guidance_in and final_layer stay bf16.
TEST(ConvertChoices, FluxDiT) {
    for (const char* prefix : {"model.diffusion_model.", ""}) {
        const auto tensors = manifest("flux_dev_d2s2.tsv", prefix);
        ASSERT_EQ(tensors.size(), 84u);
        std::set<std::string> in_blocks;
        for (const ManifestTensor& t : tensors) {
            const bool block = t.name.find("blocks.") != std::string::npos;
            const bool weight = t.name.size() > 7 && t.name.ends_with(".weight");
            if (block && weight) in_blocks.insert(t.name);
        }
        EXPECT_EQ(in_blocks.size(), 26u);  // 10 in each double block, 3 in each single
        for (DType type : {DType::Q8_0, DType::Q4_K, DType::Q5_0, DType::F16})
            EXPECT_EQ(converted(tensors, type), in_blocks) << dtype_name(type) << " " << prefix;
    }
}

// The Qwen-Image DiT: the reference converts every weight but img_in's and txt_in's (its FLUX
// names hit them), the per-head q/k norm scales and txt_norm too; biases stay. At q4_K the
// 128-wide norm scales are not a whole block and stay.
TEST(ConvertChoices, QwenImageDiT) {
    const auto tensors = manifest("qwen_image_d2.tsv", "model.diffusion_model.");
    ASSERT_EQ(tensors.size(), 77u);
    std::set<std::string> weights, norms;
    for (const ManifestTensor& t : tensors) {
        if (!t.name.ends_with(".weight") || t.name.find("img_in.") != std::string::npos ||
            t.name.find("txt_in.") != std::string::npos)
            continue;
        weights.insert(t.name);
        if (t.name.find(".attn.norm_") != std::string::npos) norms.insert(t.name);
    }
    EXPECT_EQ(weights.size(), 41u);
    EXPECT_EQ(norms.size(), 8u);
    EXPECT_EQ(converted(tensors, DType::Q8_0), weights);
    std::set<std::string> q4 = weights;
    for (const std::string& n : norms) q4.erase(n);
    EXPECT_EQ(converted(tensors, DType::Q4_K), q4);
}

// T5-XXL: every tensor is converted at q8_0, layer norms, the shared embedding and the
// relative position table included (the reference has no exception for them); at q4_K the
// position table's rows of 64 are not a whole block and stay.
TEST(ConvertChoices, T5) {
    const auto tensors = manifest("t5xxl_l2.tsv", "text_encoders.t5xxl.transformer.");
    ASSERT_EQ(tensors.size(), 21u);
    EXPECT_EQ(converted(tensors, DType::Q8_0).size(), 21u);
    const auto q4 = converted(tensors, DType::Q4_K);
    EXPECT_EQ(q4.size(), 20u);
    EXPECT_FALSE(
        q4.count("text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention."
                 "relative_attention_bias.weight"));
}

// CLIP-L and the FLUX VAE of a ComfyUI all-in-one file: embeddings, biases and convolutions
// (rows of 3 or 1) stay; linear weights and norm weights with whole blocks are converted.
TEST(ConvertChoices, ClipAndVaeOfAllInOne) {
    const auto clip = manifest("clip_l.tsv", "text_encoders.clip_l.transformer.");
    const auto q8 = converted(clip, DType::Q8_0);
    EXPECT_EQ(q8.size(), 12u * 8 + 1);  // per layer: 4 attention, 2 MLP, 2 norms; final norm
    EXPECT_FALSE(
        q8.count("text_encoders.clip_l.transformer.text_model.embeddings."
                 "token_embedding.weight"));
    EXPECT_TRUE(q8.count("text_encoders.clip_l.transformer.text_model.final_layer_norm.weight"));
    const auto vae = manifest("flux_ae.tsv", "vae.");
    size_t norms = 0, norms_256 = 0;
    for (const ManifestTensor& t : vae) {
        if (t.shape.size() != 1 || t.name.ends_with(".bias")) continue;
        ++norms;
        norms_256 += t.shape[0] % 256 == 0;
    }
    EXPECT_GT(norms, 0u);
    EXPECT_EQ(converted(vae, DType::Q8_0).size(), norms);  // every conv keeps bf16
    EXPECT_EQ(converted(vae, DType::Q4_K).size(), norms_256);
}

// Converts the sd15 fixture to `type` and checks every tensor read back: equal to the
// source, or to the engine's own conversion of it to the tensor's output type.
void check_round_trip(DType type) {
    std::string src = test::generated_checkpoint("sd15", "f16", 1);
    ModelFiles source;
    source.add(src, ModelRole::Checkpoint);
    ConvertOptions options;
    options.output_path = test::temp_path(std::string("sd15_") + dtype_name(type) + ".gguf");
    options.type = type;
    options.keep = convert_keeps();
    convert_model(source, options);
    ModelFiles result;
    result.add(options.output_path, ModelRole::Checkpoint);
    ASSERT_EQ(result.size(), source.size());
    EXPECT_EQ(detect_family(result).variant, "SD 1.x");
    size_t quantized = 0;
    for (const std::string& name : source.names()) {
        const TensorRecord& s = source.get(name);
        const TensorRecord* r = result.find(name);
        ASSERT_NE(r, nullptr) << name;
        ASSERT_EQ(r->shape, s.shape) << name;
        DType want = output_dtype(name, s.shape, s.dtype, choice_of(type));
        ASSERT_EQ(r->dtype, want) << name;
        Tensor expected = s.load();
        if (want != s.dtype) expected = convert(convert(expected, DType::F32), want);
        Tensor got = r->load();
        ASSERT_EQ(std::memcmp(got.data_ptr(), expected.contiguous().data_ptr(), got.nbytes()), 0)
            << name;
        quantized += want == type;
    }
    EXPECT_GT(quantized, 150u) << "the linear weight matrices with whole blocks are converted";
    std::remove(options.output_path.c_str());
}

TEST(ModelConvert, Sd15ToGgufQ8_0) {
    check_round_trip(DType::Q8_0);
}
TEST(ModelConvert, Sd15ToGgufQ4_0) {
    check_round_trip(DType::Q4_0);
}
TEST(ModelConvert, Sd15ToGgufQ4_K) {
    check_round_trip(DType::Q4_K);
}

// A cancel before or during a conversion ends it with sd::Cancelled and leaves no file.
TEST(ModelConvert, CancelLeavesNoFile) {
    std::string src = test::generated_checkpoint("sd15", "f16", 1);
    ModelFiles source;
    source.add(src, ModelRole::Checkpoint);
    CancelToken token;
    ConvertOptions options;
    options.output_path = test::temp_path("sd15_cancelled.gguf");
    options.type = DType::Q8_0;
    options.cancel = &token;
    auto no_file = [&] {
        return !std::ifstream(options.output_path).good() &&
               !std::ifstream(options.output_path + ".part").good();
    };
    token.cancel();
    EXPECT_THROW(convert_model(source, options), Cancelled);
    EXPECT_TRUE(no_file());
    // 1 GiB of f16 weights to q8_0 takes well over 100 ms; the cancel comes 100 ms in.
    token.reset();
    test::CancelAfter canceller(token, 100);
    EXPECT_THROW(convert_model(source, options), Cancelled);
    const double ended = canceller.ended();
    EXPECT_LT(ended, 2.0) << "seconds from the cancel to the end";
    std::printf("convert: ended %.3f s after the cancel\n", ended);
    EXPECT_TRUE(no_file());
}

TEST(ModelConvert, SafetensorsOutputHoldsPlainTypesOnly) {
    Tensor w = test::random_tensor({64, 64}, 1);
    std::string in = test::temp_path("small_in.safetensors");
    write_safetensors(in, {{"a.weight", DType::F32, w.shape(), [w] { return w; }}});
    ModelFiles files;
    files.add(in, ModelRole::Checkpoint);
    ConvertOptions options;
    options.output_path = test::temp_path("small_out.safetensors");
    options.type = DType::Q8_0;
    EXPECT_ERROR_CONTAINS(convert_model(files, options), "cannot hold q8_0");
    options.type = DType::BF16;
    convert_model(files, options);
    ModelFiles back;
    back.add(options.output_path, ModelRole::Checkpoint);
    EXPECT_EQ(back.get("a.weight").dtype, DType::BF16);
    std::remove(in.c_str());
    std::remove(options.output_path.c_str());
}

}  // namespace
}  // namespace sd
