// img2img and inpainting on FLUX.1-dev through sd-cli (the fixture model, 64x64, one or two
// steps): a mask that keeps everything gives the init image's latent whatever the seed, a half
// mask repaints its half, and --strength cuts the schedule as the reference does.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "fixture_files.h"
#include "image/image_io.h"
#include "io/io_test_util.h"

namespace {

using cli::run_cli;
using cli::RunResult;

constexpr uint32_t kSide = 64;

// An RGB gradient (the init image) or a one-channel mask: white repaints, black keeps.
sd::image::Image picture(bool mask, bool left_half_white = false) {
    sd::image::Image img{kSide, kSide, mask ? 1u : 3u, {}};
    img.pixels.resize(size_t{kSide} * kSide * img.channels);
    for (uint32_t y = 0; y < kSide; ++y) {
        for (uint32_t x = 0; x < kSide; ++x) {
            for (uint32_t c = 0; c < img.channels; ++c) {
                const uint8_t v = mask ? (left_half_white && x < kSide / 2 ? 255 : 0)
                                       : static_cast<uint8_t>((x * 4 + c * 80 + y * 3) % 256);
                img.pixels[(size_t{y} * kSide + x) * img.channels + c] = v;
            }
        }
    }
    return img;
}

// Runs FLUX.1-dev img2img on the gradient, writing OUT (OUT_0.png, OUT_1.png with -b 2).
RunResult run_flux(const std::string& out, std::vector<std::string> extra) {
    const std::string init = sd::test::temp_path("flux_init.png");
    sd::image::write_image(init, picture(false));
    std::vector<std::string> args = cli::flux_fixture_args();
    const std::vector<std::string> request = {"-p",          "a cat",
                                              "--cfg-scale", "1",
                                              "-W",          std::to_string(kSide),
                                              "-H",          std::to_string(kSide),
                                              "-s",          "5",
                                              "-t",          "2",
                                              "-i",          init,
                                              "-o",          out};
    args.insert(args.end(), request.begin(), request.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
}

// Mean absolute difference of two images over the columns [x0, x1).
double mean_diff(const sd::image::Image& a, const sd::image::Image& b, uint32_t x0, uint32_t x1) {
    double sum = 0;
    size_t n = 0;
    for (uint32_t y = 0; y < a.height; ++y) {
        for (uint32_t x = x0; x < x1; ++x) {
            for (uint32_t c = 0; c < 3; ++c) {
                const size_t i = (size_t{y} * a.width + x) * 3 + c;
                sum += std::fabs(double(a.pixels[i]) - double(b.pixels[i]));
                ++n;
            }
        }
    }
    return sum / static_cast<double>(n);
}

// A black mask keeps the init latent everywhere: two seeds give the same image, but for
// rounding (the last Euler step gives x - (x - x0), exact only up to an ulp of the seed's
// noisy x, and the decoder may move a value across an 8-bit level). A mask
// white on the left half repaints that half; the right half keeps its latent, so the two
// seeds differ there far less (only through the decoder's reach across the border).
TEST(CliFluxImg2Img, MaskKeepsTheInitLatentOutsideIt) {
    const std::string black = sd::test::temp_path("flux_mask_black.png");
    const std::string left = sd::test::temp_path("flux_mask_left.png");
    sd::image::write_image(black, picture(true));
    sd::image::write_image(left, picture(true, true));

    const std::string keep = sd::test::temp_path("flux_keep.png");
    const RunResult k = run_flux(keep, {"--mask", black, "--steps", "1", "-b", "2"});
    ASSERT_EQ(k.exit_code, 0) << k.output;
    const sd::image::Image k0 = sd::image::read_image(sd::test::temp_path("flux_keep_0.png"), 3);
    const sd::image::Image k1 = sd::image::read_image(sd::test::temp_path("flux_keep_1.png"), 3);
    EXPECT_EQ(k0.width, kSide);
    EXPECT_EQ(k0.height, kSide);
    ASSERT_EQ(k0.pixels.size(), k1.pixels.size());
    EXPECT_LT(mean_diff(k0, k1, 0, kSide), 0.01);  // a few values one level apart at most
    for (size_t i = 0; i < k0.pixels.size(); ++i)
        ASSERT_LE(std::abs(int(k0.pixels[i]) - int(k1.pixels[i])), 1) << "value " << i;

    const std::string half = sd::test::temp_path("flux_half.png");
    const RunResult h = run_flux(half, {"--mask", left, "--steps", "1", "-b", "2"});
    ASSERT_EQ(h.exit_code, 0) << h.output;
    const sd::image::Image h0 = sd::image::read_image(sd::test::temp_path("flux_half_0.png"), 3);
    const sd::image::Image h1 = sd::image::read_image(sd::test::temp_path("flux_half_1.png"), 3);
    const double repainted = mean_diff(h0, h1, 0, kSide / 2);
    const double kept = mean_diff(h0, h1, kSide / 2, kSide);
    EXPECT_GT(repainted, 5.0);
    EXPECT_GT(repainted, 2.0 * kept) << "repainted half " << repainted << ", kept half " << kept;
}

// --strength 0.4 of 2 steps runs the last step only (t_enc = int(2 * 0.4) = 0), as the
// reference cuts the schedule; the image is still the requested size.
TEST(CliFluxImg2Img, StrengthCutsTheSchedule) {
    const std::string out = sd::test::temp_path("flux_strength.png");
    const RunResult r = run_flux(out, {"--steps", "2", "--strength", "0.4", "-v"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("step 1/1"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("step 1/2"), std::string::npos) << r.output;
    const sd::image::Image img = sd::image::read_image(out, 3);
    EXPECT_EQ(img.width, kSide);
    EXPECT_EQ(img.height, kSide);
}

}  // namespace
