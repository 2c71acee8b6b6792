// LoRAs on a small model file: the counts in the log, merged and run-time application agree,
// removing the LoRA gives the base weights back bit for bit, and the bad inputs.
#include "adapters/lora_apply.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "adapters/lora_test_util.h"
#include "io/io_test_util.h"
#include "nn/layers.h"

namespace sd {
namespace {

using test::kConv;
using test::kQ;
using test::random_tensor;
using test::scalar_tensor;
using test::write_tensors;

constexpr const char* kProj = "model.diffusion_model.input_blocks.1.1.proj_in.weight";

class LoraApply : public ::testing::Test {
  protected:
    void SetUp() override {
        model_path_ = write_tensors("model.safetensors",
                                    {{kQ, random_tensor({8, 8}, 1)},
                                     {kProj, random_tensor({8, 8, 1, 1}, 2)},
                                     {kConv, random_tensor({8, 8, 3, 3}, 3)}},
                                    DType::F16);
        model_.add(model_path_, ModelRole::Checkpoint);
        lora_path_ = write_tensors(
            "lora.safetensors",
            {{"lora_te_text_model_encoder_layers_0_self_attn_q_proj.lora_down.weight",
              random_tensor({2, 8}, 4)},
             {"lora_te_text_model_encoder_layers_0_self_attn_q_proj.lora_up.weight",
              random_tensor({8, 2}, 5)},
             {"lora_te_text_model_encoder_layers_0_self_attn_q_proj.alpha", scalar_tensor(2.0f)},
             {"lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight",
              random_tensor({2, 8, 1, 1}, 6)},
             {"lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight",
              random_tensor({8, 2, 1, 1}, 7)},
             {"lora_unet_down_blocks_0_resnets_0_conv1.lora_down.weight",
              random_tensor({2, 8, 3, 3}, 8)},
             {"lora_unet_down_blocks_0_resnets_0_conv1.lora_up.weight",
              random_tensor({8, 2, 1, 1}, 9)},
             {"lora_unet_down_blocks_9_attentions_0_proj_in.lora_down.weight",
              random_tensor({2, 8}, 10)},
             {"lora_unet_down_blocks_9_attentions_0_proj_in.lora_up.weight",
              random_tensor({8, 2}, 11)}},
            DType::F16);
    }
    void TearDown() override {
        std::filesystem::remove(model_path_);
        std::filesystem::remove(lora_path_);
    }

    Tensor run_layers(const WeightPatches* patches) const {
        Linear q;
        q.weight = model_.get(kQ).load();
        q.name = kQ;
        Conv2d proj, conv;
        proj.weight = model_.get(kProj).load();
        proj.name = kProj;
        conv.weight = model_.get(kConv).load();
        conv.name = kConv;
        conv.options.pad_h = conv.options.pad_w = 1;
        const ScopedWeightPatches active(patches);
        const Tensor x = random_tensor({1, 8, 5, 5}, 20);
        Tensor h = conv.forward(proj.forward(x));
        Tensor t = q.forward(h.view({1, 8, 25}).permute({0, 2, 1}).contiguous());
        return t;
    }

    std::string model_path_, lora_path_;
    ModelFiles model_;
};

TEST_F(LoraApply, CountsAppliedAndUnmatchedTensorsInTheLog) {
    test::LogCapture log;
    WeightPatches patches;
    const LoraStats s =
        add_lora_patches(model_, {lora_path_, 1.0f}, LoraMode::Immediately, "SD 1.x", patches);
    EXPECT_EQ(s.tensors, 9u);
    EXPECT_EQ(s.applied, 7u);
    EXPECT_EQ(s.unmatched, 2u);
    EXPECT_EQ(patches.size(), 3u);
    EXPECT_NE(log.text().find("7 of 9 tensors applied to model weights, 2 unmatched"),
              std::string::npos)
        << log.text();
    EXPECT_NE(log.text().find("lora.safetensors"), std::string::npos);
}

TEST_F(LoraApply, MergedAndRunTimeAgreeAndRemovalRestoresTheBase) {
    const std::vector<float> stored = model_.get(kConv).load().to_vector();
    const Tensor base = run_layers(nullptr);
    LoraSet set;
    const WeightPatches* merged =
        set.update(model_, {{lora_path_, 0.8f}}, LoraMode::Immediately, "SD 1.x");
    ASSERT_NE(merged, nullptr);
    EXPECT_EQ(merged->at(kConv).weight.dtype(), DType::F16);  // merged in the weight's dtype
    const Tensor with_merged = run_layers(merged);
    EXPECT_GT(test::max_abs_diff(with_merged, base), 1e-2f);
    // the same list again: the same patches, not rebuilt
    EXPECT_EQ(set.update(model_, {{lora_path_, 0.8f}}, LoraMode::Immediately, "SD 1.x"), merged);
    LoraSet runtime_set;
    const WeightPatches* runtime =
        runtime_set.update(model_, {{lora_path_, 0.8f}}, LoraMode::AtRuntime, "SD 1.x");
    ASSERT_NE(runtime, nullptr);
    EXPECT_FALSE(runtime->at(kConv).weight.defined());
    EXPECT_EQ(runtime->at(kConv).terms.size(), 1u);
    const Tensor with_runtime = run_layers(runtime);
    EXPECT_LT(test::max_abs_diff(with_runtime, with_merged), 0.05f);  // f16 rounding of the merge
    // removed: the base weights again, bit for bit
    EXPECT_EQ(set.update(model_, {}, LoraMode::Immediately, "SD 1.x"), nullptr);
    EXPECT_EQ(run_layers(nullptr).to_vector(), base.to_vector());
    EXPECT_EQ(model_.get(kConv).load().to_vector(), stored);
}

TEST_F(LoraApply, SeveralLorasAndNegativeWeightsAdd) {
    LoraSet a, b;
    const Tensor base = run_layers(nullptr);
    const Tensor plus =
        run_layers(a.update(model_, {{lora_path_, 0.5f}}, LoraMode::AtRuntime, "m"));
    const Tensor both = run_layers(
        b.update(model_, {{lora_path_, 0.5f}, {lora_path_, -0.5f}}, LoraMode::AtRuntime, "m"));
    EXPECT_GT(test::max_abs_diff(plus, base), 1e-2f);
    EXPECT_LT(test::max_abs_diff(both, base), 1e-4f);  // +0.5 and -0.5 cancel
}

TEST_F(LoraApply, ALoraForAnotherModelIsAnErrorNamingIt) {
    const std::string other =
        write_tensors("sdxl_lora.safetensors",
                      {{"lora_te2_text_model_encoder_layers_0_self_attn_q_proj.lora_down.weight",
                        random_tensor({2, 16}, 1)},
                       {"lora_te2_text_model_encoder_layers_0_self_attn_q_proj.lora_up.weight",
                        random_tensor({16, 2}, 2)},
                       {"lora_te_text_model_encoder_layers_0_self_attn_q_proj.lora_down.weight",
                        random_tensor({2, 16}, 3)},
                       {"lora_te_text_model_encoder_layers_0_self_attn_q_proj.lora_up.weight",
                        random_tensor({16, 2}, 4)}});
    WeightPatches patches;
    EXPECT_ERROR_CONTAINS(
        add_lora_patches(model_, {other, 1.0f}, LoraMode::AtRuntime, "SD 1.x", patches),
        "sdxl_lora.safetensors' matched none of the SD 1.x model's weights (4 tensors, 2 of "
        "them named for weights of other sizes)");
    LoraSet set;  // and a context's set keeps no LoRA
    EXPECT_ERROR_CONTAINS(set.update(model_, {{other, 1.0f}}, LoraMode::Immediately, "SD 1.x"),
                          "not a LoRA for this model");
    std::filesystem::remove(other);
}

TEST_F(LoraApply, MissingAndTruncatedFilesAreErrorsAndLeaveNoLora) {
    LoraSet set;
    EXPECT_ERROR_CONTAINS(
        set.update(model_, {{lora_path_ + ".nope", 1.0f}}, LoraMode::Immediately, "m"), ".nope");
    const std::string cut = write_tensors(
        "cut.safetensors", {{"lora_unet_a.lora_down.weight", random_tensor({32, 32}, 1)}});
    std::filesystem::resize_file(cut, std::filesystem::file_size(cut) - 64);
    EXPECT_ERROR_CONTAINS(set.update(model_, {{cut, 1.0f}}, LoraMode::Immediately, "m"),
                          "cut.safetensors");
    EXPECT_EQ(set.update(model_, {}, LoraMode::Immediately, "m"), nullptr);
    std::filesystem::remove(cut);
}

TEST_F(LoraApply, AutoModeIsRunTimeForQuantizedModels) {
    EXPECT_EQ(resolve_lora_mode(LORA_APPLY_AUTO, model_), LoraMode::Immediately);
    EXPECT_EQ(resolve_lora_mode(LORA_APPLY_AT_RUNTIME, model_), LoraMode::AtRuntime);
    const std::string q = write_tensors("q.gguf", {{kQ, random_tensor({8, 32}, 1)}}, DType::Q8_0);
    ModelFiles quantized;
    quantized.add(q, ModelRole::Checkpoint);
    EXPECT_EQ(resolve_lora_mode(LORA_APPLY_AUTO, quantized), LoraMode::AtRuntime);
    std::filesystem::remove(q);
}

// w [.., C] += scale * up @ down, the module's row r landing on the weight's row row_of(r).
void add_low_rank(std::vector<float>& w, const Tensor& up, const Tensor& down, float scale,
                  const std::function<int64_t(int64_t)>& row_of) {
    const int64_t rows = up.size(0), rank = up.size(1), C = down.size(1);
    const std::vector<float> u = up.to_vector(), dn = down.to_vector();
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < C; ++c) {
            double sum = 0;
            for (int64_t k = 0; k < rank; ++k) sum += u[r * rank + k] * dn[k * C + c];
            w[row_of(r) * C + c] += static_cast<float>(scale * sum);
        }
}

// The LoRA at `lora_path` on `model`, merged and at run time: every tensor applied, and each
// layer of `want` computing x W^T with W its weight there.
void expect_patched(const ModelFiles& model, const std::string& lora_path, size_t tensors,
                    const std::map<std::string, std::vector<float>>& want, int64_t C) {
    const Tensor x = random_tensor({1, 3, C}, 60);
    for (LoraMode mode : {LoraMode::Immediately, LoraMode::AtRuntime}) {
        WeightPatches patches;
        const LoraStats stats = add_lora_patches(model, {lora_path, 1.0f}, mode, "DiT", patches);
        EXPECT_EQ(stats.applied, tensors);
        EXPECT_EQ(stats.unmatched, 0u);
        const ScopedWeightPatches active(&patches);
        for (const auto& [name, w] : want) {
            Linear layer;
            layer.weight = model.get(name).load();
            layer.name = name;
            Linear by_hand;
            by_hand.weight = Tensor::from_vector(layer.weight.shape(), w);
            test::expect_close(layer.forward(x), by_hand.forward(x), 1e-5, 1e-5, name.c_str());
        }
    }
}

// Diffusers' FLUX names patch thirds of BFL's fused qkv (to_q, to_k, to_v of ranks 2, 3, 1)
// and FLUX.1's proj_mlp the rest of linear1: merged or at run time, the layer computes
// x (W + D)^T with D's row blocks the modules' up @ down (times alpha / rank where given).
TEST(LoraApplyParts, ThirdsOfQkvAndTheRestOfLinear1) {
    constexpr int64_t C = 8, kMlp = 5;
    const std::string qkv = "model.diffusion_model.double_blocks.0.img_attn.qkv.weight";
    const std::string linear1 = "model.diffusion_model.single_blocks.0.linear1.weight";
    const std::string model_path = write_tensors(
        "flux_parts_model.safetensors",
        {{qkv, random_tensor({3 * C, C}, 30)}, {linear1, random_tensor({3 * C + kMlp, C}, 31)}});
    ModelFiles model;
    model.add(model_path, ModelRole::Checkpoint);
    const std::string d = "transformer.transformer_blocks.0.attn.",
                      s = "transformer.single_transformer_blocks.0.";
    std::vector<std::pair<std::string, Tensor>> parts;
    struct Module {
        std::string key;
        std::string weight;
        int64_t first, rows, rank;
        float alpha;  // 0: none
    };
    const std::vector<Module> modules = {{d + "to_q", qkv, 0, C, 2, 0.0f},
                                         {d + "to_k", qkv, C, C, 3, 1.5f},
                                         {d + "to_v", qkv, 2 * C, C, 1, 0.0f},
                                         {s + "proj_mlp", linear1, 3 * C, kMlp, 2, 0.0f}};
    std::map<std::string, std::vector<float>> want;  // W + D by hand
    want[qkv] = model.get(qkv).load().to_vector();
    want[linear1] = model.get(linear1).load().to_vector();
    uint32_t seed = 40;
    for (const Module& m : modules) {
        const Tensor down = random_tensor({m.rank, C}, seed++),
                     up = random_tensor({m.rows, m.rank}, seed++);
        parts.push_back({m.key + ".lora_A.weight", down});
        parts.push_back({m.key + ".lora_B.weight", up});
        if (m.alpha > 0) parts.push_back({m.key + ".alpha", scalar_tensor(m.alpha)});
        const float scale = m.alpha > 0 ? m.alpha / static_cast<float>(m.rank) : 1.0f;
        add_low_rank(want[m.weight], up, down, scale, [&](int64_t r) { return m.first + r; });
    }
    const std::string lora_path = write_tensors("flux_parts_lora.safetensors", parts);
    expect_patched(model, lora_path, parts.size(), want, C);
    std::filesystem::remove(model_path);
    std::filesystem::remove(lora_path);
}

// Diffusers' AdaLayerNormContinuous (FLUX's and SD3's norm_out, the norm1_context of SD3's last
// block) holds [scale; shift] where the original adaLN holds [shift; scale]: its LoRA patches
// the adaLN with the halves of its rows swapped, while a six-chunk adaLN of the same diffusers
// name (norm1_context of the other SD3 blocks) and SD3's to_k (the middle third of the fused
// qkv) are patched as they are; merged or at run time alike.
TEST(LoraApplyParts, AdaLayerNormContinuousPatchesTheAdaLnWithItsHalvesSwapped) {
    constexpr int64_t C = 6;
    const std::string dm = "model.diffusion_model.";
    const std::string final_ada = dm + "final_layer.adaLN_modulation.1.weight",
                      ctx0 = dm + "joint_blocks.0.context_block.adaLN_modulation.1.weight",
                      ctx1 = dm + "joint_blocks.1.context_block.adaLN_modulation.1.weight",
                      qkv = dm + "joint_blocks.0.x_block.attn.qkv.weight";
    const std::string model_path =
        write_tensors("adaln_model.safetensors", {{final_ada, random_tensor({2 * C, C}, 70)},
                                                  {ctx0, random_tensor({6 * C, C}, 71)},
                                                  {ctx1, random_tensor({2 * C, C}, 72)},
                                                  {qkv, random_tensor({3 * C, C}, 73)}});
    ModelFiles model;
    model.add(model_path, ModelRole::Checkpoint);
    struct Module {
        std::string key, weight;
        int64_t rows;
        std::function<int64_t(int64_t)> row;  // the weight's row of the module's row r
    };
    auto swapped = [](int64_t r) { return r < C ? r + C : r - C; };
    const std::vector<Module> modules = {
        {"transformer.norm_out.linear", final_ada, 2 * C, swapped},
        {"transformer.transformer_blocks.0.norm1_context.linear", ctx0, 6 * C,
         [](int64_t r) { return r; }},
        {"transformer.transformer_blocks.1.norm1_context.linear", ctx1, 2 * C, swapped},
        {"transformer.transformer_blocks.0.attn.to_k", qkv, C, [](int64_t r) { return r + C; }}};
    std::map<std::string, std::vector<float>> want;  // W + D by hand
    std::vector<std::pair<std::string, Tensor>> parts;
    uint32_t seed = 80;
    for (const Module& m : modules) {
        const Tensor down = random_tensor({2, C}, seed++), up = random_tensor({m.rows, 2}, seed++);
        parts.push_back({m.key + ".lora_A.weight", down});
        parts.push_back({m.key + ".lora_B.weight", up});
        std::vector<float>& w = want[m.weight];
        if (w.empty()) w = model.get(m.weight).load().to_vector();
        add_low_rank(w, up, down, 1.0f, m.row);
    }
    const std::string lora_path = write_tensors("adaln_lora.safetensors", parts);
    expect_patched(model, lora_path, parts.size(), want, C);
    std::filesystem::remove(model_path);
    std::filesystem::remove(lora_path);
}

}  // namespace
}  // namespace sd
