// The Wan VAE as a latent codec, on the real layout's fixture: an image in [0, 1] encodes to
// the VAE's mean of the [-1, 1] image, decodes to one frame of its size, tiled or not.
#include "families/parts/wan_vae_codec.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace sd
