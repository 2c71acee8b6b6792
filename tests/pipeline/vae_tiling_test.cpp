// Tiled decoding and cancellation: a cancel between tiles ends the decode with sd::Cancelled
// before the next tile runs.
#include "pipeline/vae_tiling.h"

#include <gtest/gtest.h>

#include "base/cancel.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(VaeTiling, CancelStopsBetweenTiles) {
    const Tensor z = test::random_tensor({1, 4, 24, 40}, 3);
    CancelToken token;
    const CancelScope scope(&token);
    int tiles = 0, cancel_at = 3;
    auto decode = [&](const Tensor& t) {
        if (++tiles == cancel_at) token.cancel();
        return Tensor::zeros({1, 3, t.size(2) * 8, t.size(3) * 8});
    };
    EXPECT_THROW(decode_tiled(decode, z, 16, 0.25f), Cancelled);
    EXPECT_EQ(tiles, 3);
    token.reset();
    tiles = 0;
    cancel_at = -1;
    const Tensor out = decode_tiled(decode, z, 16, 0.25f);
    EXPECT_GT(tiles, 3) << "all tiles once not cancelled";
    EXPECT_EQ(out.size(2), 24 * 8);
}

// A decoder whose every output pixel depends on its own latent pixel only: the tiles' blend
// is then the untiled decode, for a batch of latent frames decoded to more frames (as a video
// VAE: 1 + 4 (N - 1)) at 16x, which decode_tiled reads from the first tile.
TEST(VaeTiling, VideoFramesAtAnyScaleBlendToTheUntiledDecode) {
    const Tensor z = test::random_tensor({3, 2, 20, 36}, 4);
    constexpr int64_t f = 16;
    auto decode = [](const Tensor& t) {
        const int64_t n = t.size(0), h = t.size(2), w = t.size(3), frames = 1 + 4 * (n - 1);
        Tensor out = Tensor::empty({frames, 3, h * f, w * f});
        const Tensor tc = t.contiguous();
        const float* in = tc.data<float>();
        float* o = out.data<float>();
        for (int64_t j = 0; j < frames; ++j) {
            const int64_t src = (j + 3) / 4;  // frame j's latent frame
            for (int64_t c = 0; c < 3; ++c)
                for (int64_t y = 0; y < h * f; ++y)
                    for (int64_t x = 0; x < w * f; ++x) {
                        const float a = in[((src * 2 + 0) * h + y / f) * w + x / f];
                        const float b = in[((src * 2 + 1) * h + y / f) * w + x / f];
                        o[((j * 3 + c) * h * f + y) * w * f + x] =
                            a * static_cast<float>(c + 1) - b + 0.1f * static_cast<float>(j);
                    }
        }
        return out;
    };
    const Tensor whole = decode(z);
    const Tensor tiled = decode_tiled(decode, z, 12, 0.25f);
    ASSERT_EQ(tiled.shape(), whole.shape());
    test::expect_close(tiled, whole, 1e-5, 1e-5, "tiled video decode");
}

}  // namespace
}  // namespace sd
