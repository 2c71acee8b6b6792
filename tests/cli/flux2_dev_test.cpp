// FLUX.2-dev through sd-cli on tiny files written by the test: a dev DiT of width 128 with
// 1 double and 48 single blocks (the 48th tells dev from klein) and guidance_in, reading 3 x
// 64-wide states of a tiny Mistral-layout LLM of 30 blocks (the reference takes layers 10, 20
// and 30), the fixture FLUX.2 VAE, and a tekken.json made by the test in DIR/mistral/. The
// prompt and the distilled guidance reach the image; a missing Mistral vocabulary is named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "fixture_files.h"
#include "image/image_io.h"
#include "io/io_test_util.h"
#include "models/tiny_flux2.h"
#include "tokenizer/tiny_mistral_vocabulary.h"

namespace {

using cli::run_cli;
using cli::RunResult;

constexpr int64_t kLlmWidth = 64, kLayers = 30;

std::string tiny_dev_dit() {
    std::map<std::string, sd::Tensor> named;
    for (auto& [name, t] : sd::test::tiny_flux2(1, 48, {128, 3 * kLlmWidth, true}))
        named["model.diffusion_model." + name] = t;
    return sd::test::write_f32_safetensors(named, "flux2_dev_tiny");
}

// Mistral's layout (no biases or q/k norms): 2 heads of 128 over width 64, one key-value head,
// feed-forward 96; the tekken vocabulary's 1265 ids.
std::string tiny_mistral() {
    std::map<std::string, sd::Tensor> p;
    uint32_t seed = 900;
    auto matrix = [&](const std::string& name, int64_t out, int64_t in) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name] = sd::test::random_tensor({out, in}, seed++, -bound, bound);
    };
    auto gain = [&](const std::string& name) {
        p[name] = sd::test::random_tensor({kLlmWidth}, seed++, 0.5f, 1.5f);
    };
    matrix("model.embed_tokens.weight", 1265, kLlmWidth);
    for (int i = 0; i < kLayers; ++i) {
        const std::string b = "model.layers." + std::to_string(i) + ".";
        matrix(b + "self_attn.q_proj.weight", 256, kLlmWidth);
        matrix(b + "self_attn.k_proj.weight", 128, kLlmWidth);
        matrix(b + "self_attn.v_proj.weight", 128, kLlmWidth);
        matrix(b + "self_attn.o_proj.weight", kLlmWidth, 256);
        gain(b + "input_layernorm.weight");
        gain(b + "post_attention_layernorm.weight");
        matrix(b + "mlp.gate_proj.weight", 96, kLlmWidth);
        matrix(b + "mlp.up_proj.weight", 96, kLlmWidth);
        matrix(b + "mlp.down_proj.weight", kLlmWidth, 96);
    }
    gain("model.norm.weight");
    return sd::test::write_f32_safetensors(p, "flux2_dev_mistral_tiny");
}

struct Files {
    std::string dit = tiny_dev_dit();
    std::string llm = tiny_mistral();
    std::string tokenizers = sd::test::temp_path("flux2_dev_cli_tokenizers");
    Files() {
        std::filesystem::create_directories(tokenizers + "/mistral");
        std::ofstream(tokenizers + "/mistral/tekken.json") << sd::test::tiny_tekken_json();
    }
};

const Files& files() {
    static const Files f;
    return f;
}

RunResult run(const std::string& prompt, const std::string& guidance, const std::string& out,
              const std::string& tokenizer_dir, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {
        "--diffusion-model",
        files().dit,
        "--llm",
        files().llm,
        "--vae",
        sd::test::fixture_file("flux2/flux2_ae_f32_seed52.safetensors"),
        "--tokenizer-dir",
        tokenizer_dir,
        "-p",
        prompt,
        "--cfg-scale",
        "1",
        "--guidance",
        guidance,
        "-W",
        "64",
        "-H",
        "64",
        "--steps",
        "2",
        "-s",
        "7",
        "-t",
        "2",
        "-o",
        out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
}

double mean_abs_difference(const sd::image::Image& a, const sd::image::Image& b) {
    double sum = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(a.pixels[i] - b.pixels[i]);
    return sum / static_cast<double>(a.pixels.size());
}

TEST(CliFlux2Dev, GeneratesWithThePromptAndTheGuidance) {
    const std::string a = sd::test::temp_path("flux2_dev_a.png");
    const std::string b = sd::test::temp_path("flux2_dev_b.png");
    const std::string c = sd::test::temp_path("flux2_dev_c.png");
    const RunResult first = run("hello world", "3.5", a, files().tokenizers);
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_NE(first.output.find("FLUX.2-dev"), std::string::npos) << first.output;
    ASSERT_EQ(run("hello", "3.5", b, files().tokenizers).exit_code, 0);
    ASSERT_EQ(run("hello world", "1", c, files().tokenizers).exit_code, 0);
    const sd::image::Image ia = sd::image::read_image(a, 3), ib = sd::image::read_image(b, 3),
                           ic = sd::image::read_image(c, 3);
    ASSERT_EQ(ia.width, 64u);
    ASSERT_EQ(ia.height, 64u);
    EXPECT_GT(mean_abs_difference(ia, ib), 0.0) << "the prompt does not reach the image";
    EXPECT_GT(mean_abs_difference(ia, ic), 0.0) << "the guidance does not reach the image";
    // The same request again gives the same image.
    ASSERT_EQ(run("hello world", "3.5", b, files().tokenizers).exit_code, 0);
    EXPECT_EQ(mean_abs_difference(ia, sd::image::read_image(b, 3)), 0.0);
}

// A LoRA for it, half in kohya's keys (the double block's fused qkv), half in diffusers'
// (the first single block's to_qkv_mlp_proj): all four tensors patch a weight and move the image.
TEST(CliFlux2Dev, KohyaAndDiffusersLoraKeysApply) {
    const std::string dir = sd::test::temp_path("flux2_dev_loras");
    std::filesystem::create_directories(dir);
    std::map<std::string, sd::Tensor> lora;
    lora["lora_unet_double_blocks_0_img_attn_qkv.lora_down.weight"] =
        sd::test::random_tensor({4, 128}, 61, -0.5f, 0.5f);
    lora["lora_unet_double_blocks_0_img_attn_qkv.lora_up.weight"] =
        sd::test::random_tensor({384, 4}, 62, -0.5f, 0.5f);
    lora["transformer.single_transformer_blocks.0.attn.to_qkv_mlp_proj.lora_A.weight"] =
        sd::test::random_tensor({4, 128}, 63, -0.5f, 0.5f);
    lora["transformer.single_transformer_blocks.0.attn.to_qkv_mlp_proj.lora_B.weight"] =
        sd::test::random_tensor({576, 4}, 64, -0.5f, 0.5f);
    const std::string written = sd::test::write_f32_safetensors(lora, "flux2_dev_lora");
    std::filesystem::copy_file(written, dir + "/mixed.safetensors",
                               std::filesystem::copy_options::overwrite_existing);
    const std::string plain = sd::test::temp_path("flux2_dev_plain.png");
    const std::string patched = sd::test::temp_path("flux2_dev_lora.png");
    ASSERT_EQ(run("hello", "3.5", plain, files().tokenizers).exit_code, 0);
    const RunResult r =
        run("hello <lora:mixed:1>", "3.5", patched, files().tokenizers, {"--lora-model-dir", dir});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("4 of 4 tensors applied to model weights, 0 unmatched"),
              std::string::npos)
        << r.output;
    EXPECT_GT(
        mean_abs_difference(sd::image::read_image(plain, 3), sd::image::read_image(patched, 3)),
        0.0);
}

TEST(CliFlux2Dev, AMissingMistralVocabularyIsNamed) {
    const std::string empty = sd::test::temp_path("flux2_dev_no_tokenizers");
    std::filesystem::create_directories(empty);
    const RunResult r = run("hello", "3.5", sd::test::temp_path("flux2_dev_none.png"), empty);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("--llm"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("no Mistral tokenizer vocabulary"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("tekken.json"), std::string::npos) << r.output;
}

}  // namespace
