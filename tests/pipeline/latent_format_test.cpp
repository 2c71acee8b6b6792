// The latent formats: the scalar form (SD, SD3, FLUX.1), the per-channel form (mean/std per
// channel, as the Wan VAE's), and patchified latents (2x2 patches folded into channels as
// FLUX.2 reads them): values by hand, round trips, and shapes that do not fit refused.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "pipeline/latent_format.h"

namespace sd {
namespace {

Tensor ramp(const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i) - 3.0f;
    return Tensor::from_vector(shape, v);
}

void expect_near(const Tensor& a, const Tensor& b, float tol) {
    ASSERT_EQ(a.shape(), b.shape());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(pa[i], pb[i], tol) << i;
}

TEST(LatentFormat, ScalarForm) {
    LatentFormat f{16, 8, 0.3611f, 0.1159f};
    const Tensor z = ramp({1, 16, 2, 3});
    const Tensor x = to_model_latent(f, z);
    EXPECT_NEAR(x.data<float>()[5], (z.data<float>()[5] - 0.1159f) * 0.3611f, 1e-6f);
    expect_near(to_codec_latent(f, x), z, 1e-5f);
}

TEST(LatentFormat, PerChannelForm) {
    static const float mean[] = {0.5f, -1.0f, 2.0f};
    static const float std_dev[] = {2.0f, 0.5f, 4.0f};
    LatentFormat f;
    f.channels = 3;
    f.scale = 1.0f;
    f.mean = mean;
    f.std = std_dev;
    const Tensor z = ramp({1, 3, 2, 2});
    const Tensor x = to_model_latent(f, z);
    for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < 4; ++i) {
            const float v = z.data<float>()[c * 4 + i];
            EXPECT_NEAR(x.data<float>()[c * 4 + i], (v - mean[c]) / std_dev[c], 1e-6f);
        }
    }
    expect_near(to_codec_latent(f, x), z, 1e-5f);
}

TEST(LatentFormat, PatchifiedChannelsInPatchOrder) {
    LatentFormat f;
    f.channels = 8;  // 2 codec channels in 2x2 patches
    f.factor = 16;
    f.scale = 1.0f;
    f.patch = 2;
    EXPECT_EQ(f.codec_channels(), 2);
    EXPECT_EQ(f.codec_factor(), 8);
    const Tensor z = ramp({1, 2, 4, 6});
    const Tensor x = to_model_latent(f, z);
    ASSERT_EQ(x.shape(), (Shape{1, 8, 2, 3}));
    // Model channel c*4 + i*2 + j at (y, x) is codec channel c at (2y + i, 2x + j).
    for (int c = 0; c < 2; ++c)
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
                for (int y = 0; y < 2; ++y)
                    for (int xx = 0; xx < 3; ++xx) {
                        const float want = z.data<float>()[(c * 4 + 2 * y + i) * 6 + 2 * xx + j];
                        const float got = x.data<float>()[((c * 4 + i * 2 + j) * 2 + y) * 3 + xx];
                        EXPECT_EQ(got, want);
                    }
    expect_near(to_codec_latent(f, x), z, 0.0f);
}

TEST(LatentFormat, ShapesThatDoNotFitAreRefused) {
    LatentFormat f;  // 4 channels
    EXPECT_THROW(to_model_latent(f, ramp({1, 3, 2, 2})), Error);
    LatentFormat p;
    p.channels = 8;
    p.patch = 2;
    EXPECT_THROW(to_model_latent(p, ramp({1, 2, 3, 4})), Error);  // odd height
    static const float one[] = {1.0f};
    LatentFormat bad;
    bad.mean = one;  // one mean for 4 channels
    bad.std = one;
    EXPECT_THROW(to_model_latent(bad, ramp({1, 4, 2, 2})), Error);
}

}  // namespace
}  // namespace sd
