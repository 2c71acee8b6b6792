// Chroma-Radiance through sd-cli: a tiny random DiT of T5-XXL's width (models/tiny_flux.h:
// width 128, 1 + 1 blocks, a NeRF head of 2 blocks) with the fixture T5, no VAE. txt2img gives
// a picture from noise; img2img at a low strength keeps the init image (the picture is the
// latent: nothing but the one step moves it); a --vae is taken but not used, and said so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "io/io_test_util.h"
#include "models/tiny_flux.h"

namespace {

using cli::run_cli;
using cli::RunResult;

constexpr uint32_t kSide = 64;

std::string tiny_dit() {
    sd::test::Params named;
    for (auto& [name, t] : sd::test::tiny_chroma_radiance(1, 1, 2, false, false, 4096))
        named["model.diffusion_model." + name] = t;
    return sd::test::write_f32_safetensors(named, "radiance_cli");
}

RunResult run(const std::string& dit, const std::string& out, std::vector<std::string> extra,
              const std::string& steps = "2") {
    std::vector<std::string> args = {"--diffusion-model",
                                     dit,
                                     "--t5xxl",
                                     sd::test::fixture_file("flux/t5xxl_l2_f16_seed13.safetensors"),
                                     "--tokenizer-dir",
                                     sd::test::fixtures_dir() + "/tokenizers",
                                     "-p",
                                     "a red fox",
                                     "-W",
                                     "64",
                                     "-H",
                                     "64",
                                     "--steps",
                                     steps,
                                     "--seed",
                                     "7",
                                     "-t",
                                     "2",
                                     "-o",
                                     out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
}

TEST(CliChromaRadiance, DrawsAndRedrawsPicturesWithoutAVae) {
    const std::string dit = tiny_dit();
    const std::string init = cli::gradient_png("radiance_init.png", kSide);
    const sd::image::Image before = sd::image::read_image(init, 3);

    const std::string drawn = sd::test::temp_path("radiance_txt2img.png");
    const RunResult t2i = run(dit, drawn, {"--cfg-scale", "2", "-n", "blurry"});
    ASSERT_EQ(t2i.exit_code, 0) << t2i.output;
    EXPECT_NE(t2i.output.find("Chroma-Radiance"), std::string::npos) << t2i.output;
    const sd::image::Image a = sd::image::read_image(drawn, 3);
    ASSERT_EQ(a.width, kSide);
    ASSERT_EQ(a.height, kSide);
    // Drawn from noise: nothing like the gradient.
    EXPECT_LT(sd::test::psnr(a.pixels, before.pixels), 15.0);

    const std::string redrawn = sd::test::temp_path("radiance_img2img.png");
    const RunResult i2i = run(
        dit, redrawn,
        {"--cfg-scale", "1", "-i", init, "--strength", "0.05", "--scheduler", "discrete"}, "20");
    ASSERT_EQ(i2i.exit_code, 0) << i2i.output;
    const sd::image::Image b = sd::image::read_image(redrawn, 3);
    // On the plain flow schedule (the flux one shifts it by the 4096 pixels: sigma 0.05 is not
    // reached) 5% of noise and one step of twenty: the init picture, lightly moved.
    EXPECT_GT(sd::test::psnr(b.pixels, before.pixels), 18.0);  // 21 here; a wrong codec: < 10

    const std::string with_vae = sd::test::temp_path("radiance_vae.png");
    const RunResult vae = run(dit, with_vae,
                              {"--cfg-scale", "1", "--vae",
                               sd::test::fixture_file("flux/flux_ae_f32_seed11.safetensors")});
    ASSERT_EQ(vae.exit_code, 0) << vae.output;
    EXPECT_NE(vae.output.find("the VAE given is not used"), std::string::npos) << vae.output;
}

}  // namespace
