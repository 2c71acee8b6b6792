// The header-only fit check of a LoRA against a model (adapters/lora_fit.h): its counts agree
// with what applying the LoRA counts, for each kind of module, and a LoRA for another family
// is one error naming the file, the model and the family it looks made for.
#include "adapters/lora_fit.h"

#include <gtest/gtest.h>

#include "adapters/lora_apply.h"
#include "adapters/lora_test_util.h"
#include "io/io_test_util.h"

namespace sd {
namespace {

using test::kConv;
using test::kQ;
using test::random_tensor;
using test::scalar_tensor;
using test::write_tensors;

constexpr const char* kTe = "lora_te_text_model_encoder_layers_0_self_attn_q_proj";
constexpr const char* kUnetConv = "lora_unet_down_blocks_0_resnets_0_conv1";

class LoraFitTest : public ::testing::Test {
  protected:
    void SetUp() override {
        model_path_ = write_tensors(
            "fit_model.safetensors",
            {{kQ, random_tensor({8, 8}, 1)}, {kConv, random_tensor({8, 8, 3, 3}, 2)}});
        model_.add(model_path_, ModelRole::Checkpoint);
    }
    void TearDown() override {
        std::filesystem::remove(model_path_);
        for (const std::string& p : written_) std::filesystem::remove(p);
    }
    // Writes the LoRA, checks that lora_fit counts what applying it counts, returns the fit.
    LoraFit fit_as_applied(const std::string& name, const test::NamedTensors& tensors) {
        const std::string path = write_tensors(name, tensors);
        written_.push_back(path);
        const LoraFit fit = lora_fit(path, model_);
        LoraStats applied;
        try {
            WeightPatches patches;
            applied = add_lora_patches(model_, {path, 1.0f}, LoraMode::Immediately, "m", patches);
        } catch (const Error&) {  // matches nothing: applied stays 0
        }
        EXPECT_EQ(fit.fitting, applied.applied) << name;
        EXPECT_EQ(fit.tensors, tensors.size()) << name;
        return fit;
    }
    std::string model_path_;
    ModelFiles model_;
    std::vector<std::string> written_;
};

std::string part(const char* key, const char* role) {
    return std::string(key) + role;
}

TEST_F(LoraFitTest, CountsWhatApplyingCountsForEachKind) {
    const std::string te = kTe, conv = kUnetConv;
    // Plain LoRA: a linear and a 3x3 conv fit, an unknown layer does not.
    LoraFit f =
        fit_as_applied("fit_plain.safetensors",
                       {{part(kTe, ".lora_down.weight"), random_tensor({2, 8}, 3)},
                        {part(kTe, ".lora_up.weight"), random_tensor({8, 2}, 4)},
                        {part(kTe, ".alpha"), scalar_tensor(2.0f)},
                        {part(kUnetConv, ".lora_down.weight"), random_tensor({2, 8, 3, 3}, 5)},
                        {part(kUnetConv, ".lora_up.weight"), random_tensor({8, 2, 1, 1}, 6)},
                        {"lora_unet_down_blocks_9_attentions_0_proj_in.lora_down.weight",
                         random_tensor({2, 8}, 7)},
                        {"lora_unet_down_blocks_9_attentions_0_proj_in.lora_up.weight",
                         random_tensor({8, 2}, 8)}});
    EXPECT_EQ(f.fitting, 5u);
    EXPECT_EQ(f.misfit, 0u);
    // LoHa and LoKr (with a factorised w1 and a Tucker w2) on the conv; a LoKr whose w1 does
    // not divide the linear weight's rows is named for it but misfits.
    f = fit_as_applied("fit_lycoris.safetensors",
                       {{part(kUnetConv, ".hada_w1_a"), random_tensor({8, 2}, 9)},
                        {part(kUnetConv, ".hada_w1_b"), random_tensor({2, 72}, 10)},
                        {part(kUnetConv, ".hada_w2_a"), random_tensor({8, 2}, 11)},
                        {part(kUnetConv, ".hada_w2_b"), random_tensor({2, 72}, 12)},
                        {part(kTe, ".lokr_w1"), random_tensor({3, 2}, 13)},
                        {part(kTe, ".lokr_w2"), random_tensor({2, 4}, 14)}});
    EXPECT_EQ(f.fitting, 4u);
    EXPECT_EQ(f.misfit, 2u);
    f = fit_as_applied("fit_lokr.safetensors",
                       {{part(kUnetConv, ".lokr_w1_a"), random_tensor({2, 1}, 15)},
                        {part(kUnetConv, ".lokr_w1_b"), random_tensor({1, 2}, 16)},
                        {part(kUnetConv, ".lokr_w2_a"), random_tensor({2, 4}, 17)},
                        {part(kUnetConv, ".lokr_t2"), random_tensor({2, 2, 3, 3}, 18)},
                        {part(kUnetConv, ".lokr_w2_b"), random_tensor({2, 4}, 19)},
                        {part(kTe, ".diff"), random_tensor({8, 8}, 20)}});
    EXPECT_EQ(f.fitting, 6u);
    EXPECT_EQ(f.misfit, 0u);
}

TEST_F(LoraFitTest, ALoraForAnotherFamilyIsOneErrorNamingIt) {
    const std::string te2 = "lora_te2_text_model_encoder_layers_0_self_attn_q_proj";
    const LoraFit f = fit_as_applied("fit_sdxl_lora.safetensors",
                                     {{te2 + ".lora_down.weight", random_tensor({2, 16}, 1)},
                                      {te2 + ".lora_up.weight", random_tensor({16, 2}, 2)},
                                      {part(kTe, ".lora_down.weight"), random_tensor({2, 16}, 3)},
                                      {part(kTe, ".lora_up.weight"), random_tensor({16, 2}, 4)}});
    EXPECT_EQ(f.fitting, 0u);
    EXPECT_EQ(f.misfit, 2u);
    EXPECT_EQ(f.made_for, "SDXL");
    EXPECT_ERROR_CONTAINS(
        check_lora_fits(written_.back(), model_, "SD 1.x"),
        "fit_sdxl_lora.safetensors' matches none of the SD 1.x model's weights (4 tensors, 2 of "
        "them named for weights of other sizes): it is not a LoRA for this model (it looks made "
        "for SDXL)");
    // The cross-attention keys' context width tells the family too.
    const std::string k = "lora_unet_up_blocks_1_attentions_0_transformer_blocks_0_attn2_to_k";
    const LoraFit sd2 = fit_as_applied("fit_sd2_lora.safetensors",
                                       {{k + ".lora_down.weight", random_tensor({2, 1024}, 5)},
                                        {k + ".lora_up.weight", random_tensor({320, 2}, 6)}});
    EXPECT_EQ(sd2.made_for, "SD 2.x");
    EXPECT_ERROR_CONTAINS(check_lora_fits(written_.back(), model_, "SD 1.x"),
                          "(it looks made for SD 2.x)");
    // A LoRA that fits is no error; a file that is not a tensor file names itself.
    const std::string good = write_tensors(
        "fit_good.safetensors", {{part(kTe, ".lora_down.weight"), random_tensor({2, 8}, 7)},
                                 {part(kTe, ".lora_up.weight"), random_tensor({8, 2}, 8)}});
    written_.push_back(good);
    check_lora_fits(good, model_, "SD 1.x");
    EXPECT_ERROR_CONTAINS(lora_fit(good + ".missing", model_), "fit_good.safetensors.missing");
}

// A high-noise LoRA patches the same module of a two-expert model's high-noise expert, and
// nothing of the low-noise one or the text encoder.
TEST(LoraTarget, AHighNoiseLoraPatchesTheHighNoiseExpert) {
    const std::string low = "model.diffusion_model.blocks.0.self_attn.q.weight";
    const std::string high = "model.high_noise_diffusion_model.blocks.0.self_attn.q.weight";
    const std::string path = write_tensors("experts.safetensors", {{low, random_tensor({8, 8}, 1)},
                                                                   {high, random_tensor({8, 8}, 2)},
                                                                   {kQ, random_tensor({8, 8}, 3)}});
    ModelFiles model;
    model.add(path, ModelRole::Checkpoint);
    const std::string key = "diffusion_model.blocks.0.self_attn.q";
    ASSERT_TRUE(find_lora_target(model, key));
    EXPECT_EQ(find_lora_target(model, key).weight->name, low);
    ASSERT_TRUE(find_lora_target(model, key, /*high_noise=*/true));
    EXPECT_EQ(find_lora_target(model, key, true).weight->name, high);
    EXPECT_EQ(find_lora_target(model, "lora_unet_blocks_0_self_attn_q", true).weight->name, high);
    EXPECT_TRUE(find_lora_target(model, kTe));
    EXPECT_FALSE(find_lora_target(model, kTe, true));
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace sd
