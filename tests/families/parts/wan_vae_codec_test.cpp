// The Wan VAE as a latent codec, on the real layout's fixture: an image in [0, 1] encodes to
// the VAE's mean of the [-1, 1] image, decodes to one frame of its size, tiled or not; a
// video's latent decodes to its frames, tiled or not.
#include "families/parts/wan_vae_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "fixture_files.h"
#include "ops/ops.h"
#include "sampling/rng.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(WanVaeCodec, AnImageIsOneFrame) {
    ModelFiles files;
    files.add(test::fixture_file("wan/wan21_vae_f32_seed42.safetensors"), ModelRole::Vae);
    LoadOptions options;
    options.with_vae_encoder = true;
    const auto codec = load_wan_vae(files, options);
    ASSERT_TRUE(codec->has_encoder());
    EXPECT_GT(codec->weight_bytes(), 0u);

    const Tensor image = test::random_tensor({1, 3, 64, 96}, 51, 0.0f, 1.0f);
    auto rng = make_rng(CUDA_RNG, 1);
    const Tensor z = codec->encode(image, *rng);
    ASSERT_EQ(z.shape(), (Shape{1, 16, 8, 12}));
    test::expect_close(z, codec->vae().encode(image * 2.0f + -1.0f), 0, 0, "the mean");

    const Tensor x = codec->decode(z, {});
    ASSERT_EQ(x.shape(), (Shape{1, 3, 64, 96}));
    VaeTiling tiling;
    tiling.enabled = true;
    tiling.tile_size = 8;
    const Tensor tiled = codec->decode(z, tiling);
    ASSERT_EQ(tiled.shape(), x.shape());
    for (float v : tiled.to_vector()) ASSERT_TRUE(std::isfinite(v));
}

// Every frame in the same spatial tiles, each tile a whole clip through the frame cache: a
// tile that covers the latent is the untiled decode; smaller ones differ from it only where
// the decoder's reach (its middle attention sees a whole tile) crosses a tile's edge.
TEST(WanVaeCodec, AVideoDecodesInTiles) {
    ModelFiles files;
    files.add(test::fixture_file("wan/wan21_vae_f32_seed42.safetensors"), ModelRole::Vae);
    const auto codec = load_wan_vae(files, LoadOptions{});
    const Tensor z = test::random_tensor({1, 16, 2, 8, 12}, 52);
    const Tensor whole = codec->decode(z, {});
    ASSERT_EQ(whole.shape(), (Shape{5, 3, 64, 96}));
    VaeTiling tiling;
    tiling.enabled = true;
    tiling.tile_size = 16;
    test::expect_close(codec->decode(z, tiling), whole, 0, 0, "one tile");
    tiling.tile_size = 8;
    tiling.overlap = 0.5f;
    const Tensor tiled = codec->decode(z, tiling);
    ASSERT_EQ(tiled.shape(), whole.shape());
    const std::vector<float> a = tiled.to_vector(), b = whole.to_vector();
    double err = 0, power = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_TRUE(std::isfinite(a[i]));
        err += (a[i] - b[i]) * (a[i] - b[i]);
        power += b[i] * b[i];
    }
    const double snr_db = 10 * std::log10(power / err);
    std::printf("tiled vs whole: %.1f dB\n", snr_db);
    EXPECT_GT(snr_db, 10.0);
}

}  // namespace
}  // namespace sd
