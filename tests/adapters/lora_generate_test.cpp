// LoRAs through a whole generation on the sd15 fixture at 64x64: the image changes with the
// LoRA (merged or at run time, which agree), and the next generation without it is the base
// model's image again, bit for bit.
#include <gtest/gtest.h>

#include "adapters/lora_apply.h"
#include "adapters/lora_test_util.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "pipeline/generate.h"

namespace sd {
namespace {

using test::random_tensor;

class LoraGeneration : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        files_ = new ModelFiles();
        files_->add(test::generated_checkpoint("sd15", "f16", 1), ModelRole::Checkpoint);
        LoadOptions options;
        options.tokenizer_dir = test::fixtures_dir() + "/tokenizers";
        model_ = new LoadedModel(load_model(*files_, options));
        // A kohya LoRA on a UNet attention projection, a 3x3 resnet conv and a CLIP MLP.
        lora_ = new std::string(test::write_tensors(
            "sd15_lora.safetensors",
            {{"lora_unet_mid_block_attentions_0_transformer_blocks_0_attn1_to_q.lora_down.weight",
              random_tensor({4, 1280}, 1, -0.2f, 0.2f)},
             {"lora_unet_mid_block_attentions_0_transformer_blocks_0_attn1_to_q.lora_up.weight",
              random_tensor({1280, 4}, 2, -0.2f, 0.2f)},
             {"lora_unet_down_blocks_0_resnets_0_conv1.lora_down.weight",
              random_tensor({4, 320, 3, 3}, 3, -0.1f, 0.1f)},
             {"lora_unet_down_blocks_0_resnets_0_conv1.lora_up.weight",
              random_tensor({320, 4, 1, 1}, 4, -0.1f, 0.1f)},
             {"lora_te_text_model_encoder_layers_5_mlp_fc1.lora_down.weight",
              random_tensor({4, 768}, 5, -0.2f, 0.2f)},
             {"lora_te_text_model_encoder_layers_5_mlp_fc1.lora_up.weight",
              random_tensor({3072, 4}, 6, -0.2f, 0.2f)}},
            DType::F16));
    }
    static void TearDownTestSuite() {
        std::filesystem::remove(*lora_);
        delete lora_;
        delete model_;
        delete files_;
    }
    static image::Image generate(const WeightPatches* patches) {
        ImageRequest r;
        r.prompt = "a lovely cat";
        r.width = r.height = 64;
        r.steps = 1;
        r.seed = 7;
        r.method = EULER_SAMPLE_METHOD;
        const ScopedWeightPatches active(patches);
        return generate_images(model_->components, r).at(0);
    }
    static double mean_abs_diff(const image::Image& a, const image::Image& b) {
        double sum = 0;
        for (size_t i = 0; i < a.pixels.size(); ++i)
            sum += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
        return sum / static_cast<double>(a.pixels.size());
    }
    static ModelFiles* files_;
    static LoadedModel* model_;
    static std::string* lora_;
};
ModelFiles* LoraGeneration::files_ = nullptr;
LoadedModel* LoraGeneration::model_ = nullptr;
std::string* LoraGeneration::lora_ = nullptr;

TEST_F(LoraGeneration, ChangesTheImageAndRemovingItGivesTheBaseImageBack) {
    const image::Image base = generate(nullptr);
    test::LogCapture log;
    LoraSet set;
    const image::Image merged =
        generate(set.update(*files_, {{*lora_, 6.0f}}, LoraMode::Immediately, "SD 1.x"));
    EXPECT_NE(log.text().find("6 of 6 tensors applied to model weights, 0 unmatched"),
              std::string::npos)
        << log.text();
    // (random weights: the images are structured noise, and one step changes them a little)
    const double effect = mean_abs_diff(merged, base);
    EXPECT_GT(effect, 0.05);
    LoraSet runtime;
    const image::Image at_runtime =
        generate(runtime.update(*files_, {{*lora_, 6.0f}}, LoraMode::AtRuntime, "SD 1.x"));
    const double modes = mean_abs_diff(at_runtime, merged);
    EXPECT_LT(modes, 0.5 * effect);
    std::printf(
        "LoRA effect %.3f, merged vs at run time %.3f (mean |difference| of 8-bit values)\n",
        effect, modes);
    const image::Image again = generate(set.update(*files_, {}, LoraMode::Immediately, "SD 1.x"));
    EXPECT_EQ(again.pixels, base.pixels);
}

}  // namespace
}  // namespace sd
