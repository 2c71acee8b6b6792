// FLUX.1 Fill and Canny / Depth dev through sd-cli: the fixture VAE, CLIP-L and T5 with a tiny
// DiT of their widths (context 4096, pooled 768; width 128, 1 + 1 blocks) written by the test
// with img_in of 384 (Fill) or 128 (Canny / Depth). Fill inpaints from -i and --mask and
// refuses a request without them, naming the options; Canny / Depth runs from
// --control-image (with --canny) and refuses a request without one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "fixture_files.h"
#include "image/image_io.h"
#include "io/io_test_util.h"
#include "models/tiny_flux.h"

namespace {

using cli::run_cli;
using cli::RunResult;

constexpr uint32_t kSide = 64;

// The tiny DiT with img_in of `img_in` inputs under model.diffusion_model.
std::string tiny_dit(int64_t img_in) {
    sd::test::Params named;
    for (auto& [name, t] : sd::test::tiny_flux(1, 1, true, img_in, 4096, 768))
        named["model.diffusion_model." + name] = t;
    return sd::test::write_f32_safetensors(named, "flux_tiny_in" + std::to_string(img_in));
}

// A gradient picture, or a mask white (repaint) on the left half.
std::string picture(const std::string& name, bool mask) {
    sd::image::Image img{kSide, kSide, mask ? 1u : 3u, {}};
    for (uint32_t y = 0; y < kSide; ++y) {
        for (uint32_t x = 0; x < kSide; ++x) {
            for (uint32_t c = 0; c < img.channels; ++c) {
                img.pixels.push_back(mask ? (x < kSide / 2 ? 255 : 0)
                                          : static_cast<uint8_t>((x * 4 + c * 80 + y * 3) % 256));
            }
        }
    }
    const std::string path = sd::test::temp_path(name);
    sd::image::write_image(path, img);
    return path;
}

RunResult run(const std::string& dit, const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = cli::flux_fixture_args();
    args[1] = dit;  // --diffusion-model
    const std::vector<std::string> request = {"-p", "a cat", "--cfg-scale", "1",       "-W",
                                              "64", "-H",    "64",          "--steps", "2",
                                              "-t", "2",     "-o",          out};
    args.insert(args.end(), request.begin(), request.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
}

TEST(CliFluxFill, InpaintsFromInitImageAndMask) {
    const std::string dit = tiny_dit(384);
    const std::string init = picture("fill_init.png", false);
    const std::string mask = picture("fill_mask.png", true);
    const std::string out = sd::test::temp_path("fill_out.png");
    const RunResult ok = run(dit, out, {"-i", init, "--mask", mask});
    ASSERT_EQ(ok.exit_code, 0) << ok.output;
    EXPECT_NE(ok.output.find("FLUX.1 Fill"), std::string::npos) << ok.output;
    const sd::image::Image img = sd::image::read_image(out, 3);
    EXPECT_EQ(img.width, kSide);
    const RunResult no_mask = run(dit, out, {"-i", init});
    EXPECT_NE(no_mask.exit_code, 0);
    EXPECT_NE(no_mask.output.find("--mask"), std::string::npos) << no_mask.output;
    const RunResult none = run(dit, out, {});
    EXPECT_NE(none.exit_code, 0);
    EXPECT_NE(none.output.find("-i"), std::string::npos) << none.output;
}

TEST(CliFluxFill, CannyDepthRunsFromTheControlImage) {
    const std::string dit = tiny_dit(128);
    const std::string control = picture("canny_control.png", false);
    const std::string out = sd::test::temp_path("canny_out.png");
    const RunResult ok = run(dit, out, {"--control-image", control, "--canny"});
    ASSERT_EQ(ok.exit_code, 0) << ok.output;
    EXPECT_NE(ok.output.find("FLUX.1 Canny/Depth"), std::string::npos) << ok.output;
    EXPECT_EQ(sd::image::read_image(out, 3).width, kSide);
    const RunResult none = run(dit, out, {});
    EXPECT_NE(none.exit_code, 0);
    EXPECT_NE(none.output.find("--control-image"), std::string::npos) << none.output;
}

}  // namespace
