// Qwen-Image-Layered through sd-cli: a tiny random Layered DiT (models/tiny_qwen_image.h, with
// its addition_t_embedding, of Qwen2.5-VL-7B's text width) with the fixture Qwen2.5-VL and a
// tiny RGBA Wan VAE (models/tiny_wan_vae.h). --qwen-image-layers N decomposes the reference
// image into N + 1 RGBA images (numbered files, the composite first), each frame of the
// latent its own picture; N = 0 gives the composite alone; an init image, an RGB VAE and a
// negative layer count are refused by name, and the RGBA VAE under a plain Qwen-Image too.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "io/io_test_util.h"
#include "models/tiny_qwen_image.h"
#include "models/tiny_wan_vae.h"

namespace {

using cli::run_cli;
using cli::RunResult;

constexpr uint32_t kSide = 64;

std::string tiny_dit(bool layered) {
    std::map<std::string, sd::Tensor> named;
    for (auto& [name, t] : sd::test::tiny_qwen_image(2, false, layered, 3584))
        named["model.diffusion_model." + name] = t;
    return sd::test::write_f32_safetensors(named, layered ? "qwen_layered_dit" : "qwen_plain_dit");
}

std::string tiny_vae(int64_t colors) {
    std::map<std::string, sd::Tensor> named;
    for (auto& [name, t] : sd::test::TinyWanVae(16, colors).p)
        named["first_stage_model." + name] = t;
    return sd::test::write_f32_safetensors(named, "qwen_layered_vae" + std::to_string(colors));
}

RunResult run(const std::string& dit, const std::string& vae, const std::string& out,
              std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "--diffusion-model",
        dit,
        "--llm",
        sd::test::fixture_file("qwen_image/qwen2_5_vl_7b_l2_vis2_bf16_seed41.safetensors"),
        "--vae",
        vae,
        "-p",
        "a red fox in front of a house",
        "-W",
        "64",
        "-H",
        "64",
        "--steps",
        "2",
        "--cfg-scale",
        "1",
        "--seed",
        "7",
        "-t",
        "2",
        "-o",
        out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
}

// The PNG's colour type (IHDR byte 25): 6 is RGBA; and its pixels, alpha stripped.
int png_color_type(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> head(26, 0);
    f.read(head.data(), 26);
    return f.good() ? static_cast<unsigned char>(head[25]) : -1;
}

TEST(CliQwenImageLayered, DecomposesTheReferenceIntoRgbaLayers) {
    const std::string dit = tiny_dit(true), vae = tiny_vae(4);
    const std::string ref = cli::gradient_png("layered_ref.png", kSide);
    const std::string base = sd::test::temp_path("layered_out");
    const RunResult r = run(dit, vae, base + ".png", {"-r", ref, "--qwen-image-layers", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Qwen-Image-Layered"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("(RGBA)"), std::string::npos) << r.output;
    // No warning about the preset's pass_to_vlm: Layered reads no images in its prompt.
    EXPECT_EQ(r.output.find("pass_to_vlm"), std::string::npos) << r.output;
    std::vector<sd::image::Image> layers;
    for (int i = 0; i < 3; ++i) {
        const std::string path = base + "_" + std::to_string(i) + ".png";
        EXPECT_EQ(png_color_type(path), 6) << path;
        layers.push_back(sd::image::read_image(path, 3));
        EXPECT_EQ(layers.back().width, kSide);
        EXPECT_EQ(layers.back().height, kSide);
    }
    EXPECT_EQ(png_color_type(base + "_3.png"), -1) << "a fourth image";
    // Each frame is its own picture: the layers differ from the composite and each other.
    EXPECT_LT(sd::test::psnr(layers[0].pixels, layers[1].pixels), 60.0);
    EXPECT_LT(sd::test::psnr(layers[1].pixels, layers[2].pixels), 60.0);

    // No layers: the composite alone, as one unnumbered image; the reference changes it.
    const std::string alone = sd::test::temp_path("layered_alone.png");
    const RunResult r0 = run(dit, vae, alone, {"-r", ref, "--qwen-image-layers", "0"});
    ASSERT_EQ(r0.exit_code, 0) << r0.output;
    EXPECT_EQ(png_color_type(alone), 6);
    const std::string no_ref = sd::test::temp_path("layered_no_ref.png");
    const RunResult r1 = run(dit, vae, no_ref, {"--qwen-image-layers", "0"});
    ASSERT_EQ(r1.exit_code, 0) << r1.output;
    EXPECT_LT(sd::test::psnr(sd::image::read_image(alone, 3).pixels,
                             sd::image::read_image(no_ref, 3).pixels),
              60.0);
}

TEST(CliQwenImageLayered, RefusesWhatItCannotDoByName) {
    const std::string dit = tiny_dit(true), rgba = tiny_vae(4), rgb = tiny_vae(3);
    const std::string ref = cli::gradient_png("layered_refused_ref.png", kSide);
    const std::string out = sd::test::temp_path("layered_refused.png");

    const RunResult init = run(dit, rgba, out, {"-i", ref, "--qwen-image-layers", "1"});
    EXPECT_NE(init.exit_code, 0);
    EXPECT_NE(init.output.find("an init image (img2img, -i) is not supported"), std::string::npos)
        << init.output;

    const RunResult negative = run(dit, rgba, out, {"--qwen-image-layers", "-1"});
    EXPECT_NE(negative.exit_code, 0);
    EXPECT_NE(negative.output.find("--qwen-image-layers"), std::string::npos) << negative.output;

    const RunResult rgb_vae = run(dit, rgb, out, {"-r", ref});
    EXPECT_NE(rgb_vae.exit_code, 0);
    EXPECT_NE(rgb_vae.output.find("makes RGB images; this model needs RGBA"), std::string::npos)
        << rgb_vae.output;
    EXPECT_NE(rgb_vae.output.find(rgb), std::string::npos) << rgb_vae.output;

    const RunResult plain = run(tiny_dit(false), rgba, out, {});
    EXPECT_NE(plain.exit_code, 0);
    EXPECT_NE(plain.output.find("makes RGBA (Qwen-Image-Layered's VAE) images; this model needs "
                                "RGB"),
              std::string::npos)
        << plain.output;
}

}  // namespace
