// The decode's tiling for a generation: the request's when it asks or the weights stay
// resident; in the streamed mode, tiles sized by the codec's footprint (the KL VAE's 80
// latent pixels, the Wan VAE's far smaller ones) once the latent exceeds one tile.
#include "pipeline/decode_tiling.h"

#include <gtest/gtest.h>

#include "families/parts/wan_vae_codec.h"

namespace sd {
namespace {

ModelComponents streamed(double decode_per_pixel, int64_t factor) {
    ModelComponents m;
    m.memory.residency = Residency::Streamed;
    m.footprint.decode_per_pixel = decode_per_pixel;
    m.latent.factor = factor;
    return m;
}

TEST(DecodeTiling, StreamedKlVaeTilesAbove640Pixels) {
    const ModelComponents m = streamed(ActivationFootprint{}.decode_per_pixel, 8);
    EXPECT_FALSE(decode_tiling(m, {}, 80, 80).enabled);
    const VaeTiling t = decode_tiling(m, {}, 128, 96);
    EXPECT_TRUE(t.enabled);
    EXPECT_EQ(t.tile_size, 80);
    EXPECT_FLOAT_EQ(t.overlap, 0.2f);
}

TEST(DecodeTiling, TheWanVaeGetsTilesOfAsManyBytes) {
    const VaeTiling wan21 = decode_tiling(streamed(kWanDecodeBytesPerPixel, 8), {}, 60, 104);
    EXPECT_TRUE(wan21.enabled);
    EXPECT_EQ(wan21.tile_size, 24);  // 196 pixels a side: 30 KB / pixel * 196^2 ~ 1.15 GB
    const VaeTiling wan22 = decode_tiling(streamed(kWanDecodeBytesPerPixel, 16), {}, 30, 52);
    EXPECT_EQ(wan22.tile_size, 12);
    EXPECT_FALSE(decode_tiling(streamed(kWanDecodeBytesPerPixel, 8), {}, 24, 24).enabled);
}

TEST(DecodeTiling, TheRequestWinsAndResidentModelsAreLeftAlone) {
    ModelComponents m = streamed(kWanDecodeBytesPerPixel, 8);
    VaeTiling asked;
    asked.enabled = true;
    asked.tile_size = 40;
    asked.overlap = 0.5f;
    const VaeTiling t = decode_tiling(m, asked, 60, 104);
    EXPECT_EQ(t.tile_size, 40);
    EXPECT_FLOAT_EQ(t.overlap, 0.5f);
    m.memory.residency = Residency::Resident;
    EXPECT_FALSE(decode_tiling(m, {}, 60, 104).enabled);
}

}  // namespace
}  // namespace sd
