// TAESD as a latent codec: it hands TAESD the model's latents, so the codec undoes the
// family's LatentFormat (SD 1.x's and SDXL's scales), returns images in [-1, 1] like the
// VAE, tiles in the reference's 64-pixel tiles, and refuses a TAESD of another latent width.
#include "pipeline/taesd_codec.h"

#include <gtest/gtest.h>

#include "fixture_files.h"
#include "ops/ops.h"
#include "test_util.h"

namespace sd {
namespace {

std::string fixture() {
    return test::generated_checkpoint("taesd", "f32", 5);
}

TEST(TaesdCodec, UsesTheModelsLatentScale) {
    for (const float scale : {0.18215f, 0.13025f}) {  // SD 1.x / 2.x and SDXL
        LatentFormat format;
        format.scale = scale;
        const auto codec = load_taesd_codec(fixture(), format, Residency::Resident);
        ASSERT_TRUE(codec->has_encoder());
        const Tensor z = test::random_tensor({1, 4, 4, 6}, 21, -3.0f, 3.0f);
        const Tensor decoded = codec->decode(z, {});
        const Tensor want = codec->taesd().decode(z * scale) * 2.0f + -1.0f;
        EXPECT_LT(test::compare(decoded, want).max_abs, 1e-5) << scale;
        const Tensor image = test::random_tensor({1, 3, 32, 48}, 22, 0.0f, 1.0f);
        // TAESD has no posterior to sample: the generator is left as it was.
        const auto rng = make_rng(CUDA_RNG, 1), untouched = make_rng(CUDA_RNG, 1);
        const Tensor latent = codec->encode(image, *rng);
        EXPECT_EQ(rng->randn(4), untouched->randn(4));
        const Tensor want_latent = codec->taesd().encode(image) * (1.0f / scale);
        EXPECT_LT(test::compare(latent, want_latent).max_abs, 1e-5) << scale;
    }
}

TEST(TaesdCodec, TiledDecodeCoversTheImage) {
    const auto codec = load_taesd_codec(fixture(), LatentFormat{}, Residency::Resident);
    const Tensor z = test::random_tensor({1, 4, 8, 80}, 23);
    VaeTiling tiling;
    tiling.enabled = true;
    const Tensor tiled = codec->decode(z, tiling);
    ASSERT_EQ(tiled.shape(), (Shape{1, 3, 64, 640}));
    // Away from the seams the tiles are the untiled decode.
    const Tensor plain = codec->decode(z, {});
    const std::vector<float> a = tiled.to_vector(), b = plain.to_vector();
    EXPECT_NEAR(a[10 * 640 + 20], b[10 * 640 + 20], 1e-4);
}

TEST(TaesdCodec, RefusesAnotherLatentWidth) {
    LatentFormat flux;
    flux.channels = 16;
    try {
        load_taesd_codec(fixture(), flux, Residency::Resident);
        FAIL() << "a 4-channel TAESD loaded for 16-channel latents";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("16"), std::string::npos) << e.what();
    }
    EXPECT_THROW(
        load_taesd_codec("/nonexistent/taesd.safetensors", LatentFormat{}, Residency::Resident),
        Error);
}

}  // namespace
}  // namespace sd
