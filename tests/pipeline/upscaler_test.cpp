// Tiled upscaling: the tile plan against hand-computed spans, the smootherstep blend
// reproducing any tile-local function exactly (identity, nearest 2x), the upscaler's tiled
// result against the untiled one, and its image conversions.
#include "pipeline/upscaler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/cancel.h"
#include "base/error.h"
#include "base/log.h"
#include "esrgan_files.h"
#include "ops/ops.h"
#include "pipeline/tiles.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(Tiles, PlanAsTheReference) {
    // 300 in tiles of 128 with 0.25 overlap: extent 172, target 172 / 96 = 1.79 intervals,
    // at least 2 (so neighbours overlap): offsets 0, 86, 172, each sharing 42.
    const std::vector<TileSpan> s = plan_tiles(300, 128, 0.25f);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].offset, 0);
    EXPECT_EQ(s[1].offset, 86);
    EXPECT_EQ(s[2].offset, 172);
    EXPECT_EQ(s[0].overlap_before, 0);
    EXPECT_EQ(s[0].overlap_after, 42);
    EXPECT_EQ(s[1].overlap_before, 42);
    EXPECT_EQ(s[1].overlap_after, 42);
    EXPECT_EQ(s[2].overlap_after, 0);
    EXPECT_EQ(plan_tiles(100, 128, 0.25f).size(), 1u);
    EXPECT_THROW(plan_tiles(100, 0, 0.25f), Error);
    EXPECT_THROW(plan_tiles(100, 10, 1.0f), Error);
}

// The blend weights of the tiles covering a point sum to one, so a function that acts on
// each pixel alone comes back exactly (up to f32 rounding of the weights).
TEST(Tiles, BlendReproducesPixelwiseFunctions) {
    Tensor x = test::random_tensor({1, 2, 70, 123}, 1);
    Tensor same = process_tiles(x, 1, 32, 0.25f, [](const Tensor& t) { return t; });
    test::expect_close(same, x, 2e-6, 0, "identity in tiles");
    Tensor up =
        process_tiles(x, 2, 24, 0.3f, [](const Tensor& t) { return upsample_nearest2x(t); });
    test::expect_close(up, ref::upsample_nearest2x(x), 2e-6, 0, "nearest 2x in tiles");
    EXPECT_THROW(process_tiles(x, 2, 32, 0.25f, [](const Tensor& t) { return t; }), Error);
}

// A cancel between tiles: the tiles after it are not run.
TEST(Tiles, CancelStopsBetweenTiles) {
    Tensor x = test::random_tensor({1, 2, 70, 123}, 1);
    CancelToken token;
    const CancelScope scope(&token);
    int tiles = 0;
    EXPECT_THROW(process_tiles(x, 1, 32, 0.25f,
                               [&](const Tensor& t) {
                                   if (++tiles == 2) token.cancel();
                                   return t;
                               }),
                 Cancelled);
    EXPECT_EQ(tiles, 2);
}

TEST(Upscaler, CancelReachesInsideTheNetwork) {
    const std::string path = test::temp_path("upscaler_cancel.safetensors");
    test::write_tiny_esrgan(path, test::TinyEsrgan{}, 61);
    Upscaler whole(path, 0);  // one piece: only the network's ops can stop it
    image::Image img{40, 40, 3, std::vector<uint8_t>(40 * 40 * 3, 90)};
    CancelToken token;
    EXPECT_EQ(whole.upscale(img, &token).width, 160u);
    // Cancelled as the upscale starts (its first log line): an op of the network stops it.
    struct Hook {
        CancelToken* token;
        static void log(LogLevel, const char* text, void* user) {
            if (std::string(text).find("upscaling from") != std::string::npos)
                static_cast<Hook*>(user)->token->cancel();
        }
    } hook{&token};
    set_log_callback(&Hook::log, &hook);
    EXPECT_THROW(whole.upscale(img, &token), Cancelled);
    set_log_callback(nullptr, nullptr);
    token.reset();
    EXPECT_EQ(whole.upscale(img, &token).width, 160u) << "a reset token lets it run again";
}

TEST(Upscaler, TiledMatchesUntiledWithinTolerance) {
    const std::string path = test::temp_path("upscaler_tiny.safetensors");
    test::write_tiny_esrgan(path, test::TinyEsrgan{}, 60);
    Upscaler whole(path, 0), tiled(path, 24);
    EXPECT_EQ(whole.scale(), 4);
    // A smooth picture: gradients, as upscalers see.
    Tensor x = Tensor::empty({1, 3, 40, 56});
    float* p = x.data<float>();
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t y = 0; y < 40; ++y)
            for (int64_t z = 0; z < 56; ++z)
                p[(c * 40 + y) * 56 + z] = 0.5f + 0.4f * std::sin(0.1f * y + 0.07f * z + c);
    const Tensor a = whole.upscale_tensor(x), b = tiled.upscale_tensor(x);
    ASSERT_EQ(a.shape(), b.shape());
    // Tiles see zero padding where the whole image has neighbours; the blend hides it but
    // does not remove it: PSNR over the [0, 1] range.
    const std::vector<float> va = a.to_vector(), vb = b.to_vector();
    double se = 0;
    for (size_t i = 0; i < va.size(); ++i) se += (va[i] - vb[i]) * (va[i] - vb[i]);
    const double psnr = 10 * std::log10(1.0 / (se / static_cast<double>(va.size())));
    EXPECT_GT(psnr, 40.0) << "tiled vs untiled";
}

TEST(Upscaler, ImagesOfAnyChannelCount) {
    const std::string path = test::temp_path("upscaler_tiny2.safetensors");
    test::TinyEsrgan t;
    t.upsamples = 1;
    test::write_tiny_esrgan(path, t, 70);
    Upscaler up(path, 0);
    for (uint32_t channels : {1u, 3u, 4u}) {
        image::Image img;
        img.width = 9;
        img.height = 7;
        img.channels = channels;
        img.pixels.assign(9 * 7 * channels, 100);
        const image::Image out = up.upscale(img);
        EXPECT_EQ(out.width, 18u);
        EXPECT_EQ(out.height, 14u);
        EXPECT_EQ(out.channels, 3u);
    }
    EXPECT_THROW(Upscaler(testing::TempDir() + "/missing.safetensors", 0), Error);
}

}  // namespace
}  // namespace sd
