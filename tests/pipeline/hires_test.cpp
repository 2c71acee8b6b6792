// The hires fix's pieces that need no model: the target size as the reference resolves it,
// and each latent upscaler's interpolation (mode and antialiasing) on a small latent.
#include "pipeline/hires.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "ops/interpolate.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(Hires, TargetSizeAsTheReference) {
    HiresRequest h;
    resolve_hires_target(h, 512, 384, 1.5f, 8);
    EXPECT_EQ(h.target_width, 768);
    EXPECT_EQ(h.target_height, 576);
    HiresRequest one;
    one.target_width = 700;  // only one side: square, up to a multiple of 8
    resolve_hires_target(one, 512, 512, 2.0f, 8);
    EXPECT_EQ(one.target_width, 704);
    EXPECT_EQ(one.target_height, 704);
    HiresRequest odd;
    odd.target_width = 200;
    odd.target_height = 152;
    resolve_hires_target(odd, 512, 512, 2.0f, 64);
    EXPECT_EQ(odd.target_width, 256);
    EXPECT_EQ(odd.target_height, 192);
    HiresRequest both;
    both.target_width = 640;
    both.target_height = 320;
    both.denoising_strength = 0.0f;  // clamped to the reference's 0.0001
    resolve_hires_target(both, 512, 512, 2.0f, 8);
    EXPECT_EQ(both.target_width, 640);
    EXPECT_EQ(both.target_height, 320);
    EXPECT_FLOAT_EQ(both.denoising_strength, 0.0001f);
    HiresRequest tiny;  // round(64 * 0.05) = 3: aligned up, as the reference does
    resolve_hires_target(tiny, 64, 64, 0.05f, 8);
    EXPECT_EQ(tiny.target_width, 8);
    HiresRequest empty;
    EXPECT_THROW(resolve_hires_target(empty, 64, 64, 0.0f, 8), Error);
}

TEST(Hires, LatentUpscalersUseTheirInterpolation) {
    const Tensor z = test::random_tensor({1, 4, 6, 5}, 3);
    const std::pair<sd_hires_upscaler_t, std::pair<InterpolateMode, bool>> modes[] = {
        {SD_HIRES_UPSCALER_LATENT, {InterpolateMode::Bilinear, false}},
        {SD_HIRES_UPSCALER_LATENT_NEAREST, {InterpolateMode::Nearest, false}},
        {SD_HIRES_UPSCALER_LATENT_NEAREST_EXACT, {InterpolateMode::NearestExact, false}},
        {SD_HIRES_UPSCALER_LATENT_ANTIALIASED, {InterpolateMode::Bilinear, true}},
        {SD_HIRES_UPSCALER_LATENT_BICUBIC, {InterpolateMode::Bicubic, false}},
        {SD_HIRES_UPSCALER_LATENT_BICUBIC_ANTIALIASED, {InterpolateMode::Bicubic, true}},
    };
    for (const auto& [upscaler, mode] : modes) {
        const Tensor got = upscale_latent(z, upscaler, 9, 13);
        EXPECT_EQ(got.shape(), (Shape{1, 4, 9, 13}));
        test::expect_close(got, interpolate(z, 9, 13, mode.first, mode.second), 0, 0,
                           sd_hires_upscaler_name(upscaler));
    }
    // The nearest latent upscale doubles each value into a 2x2 block.
    const Tensor twice = upscale_latent(z, SD_HIRES_UPSCALER_LATENT_NEAREST, 12, 10);
    EXPECT_EQ(twice.to_vector()[0], z.to_vector()[0]);
    EXPECT_EQ(twice.to_vector()[11], z.to_vector()[0]);
    EXPECT_THROW(upscale_latent(z, SD_HIRES_UPSCALER_LANCZOS, 12, 10), Error);
}

}  // namespace
}  // namespace sd
