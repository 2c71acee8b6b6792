// interpolate: every mode against values worked out by hand from the reference's
// definitions (torch's nearest and nearest-exact, half-pixel bilinear and bicubic a = -0.75
// with clamped borders, antialiased filters widened by the downscale factor and normalised,
// Lanczos-3 normalised). Tolerance: 1e-5 (f32 results of double sums).
#include "ops/interpolate.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "test_util.h"

namespace sd {
namespace {

Tensor row(const std::vector<float>& v) {
    return Tensor::from_vector({1, 1, 1, static_cast<int64_t>(v.size())}, v);
}

void expect_row(const Tensor& got, const std::vector<float>& want, const char* what) {
    test::expect_close(got, row(want), 1e-5, 0, what);
}

TEST(Interpolate, NearestModes) {
    // nearest: source = dst * in / out; nearest-exact: floor((dst + 0.5) * in / out).
    expect_row(interpolate(row({1, 2, 3}), 1, 5, InterpolateMode::Nearest), {1, 1, 2, 2, 3},
               "nearest 3 -> 5");
    expect_row(interpolate(row({1, 2, 3}), 1, 5, InterpolateMode::NearestExact), {1, 1, 2, 3, 3},
               "nearest-exact 3 -> 5");
    expect_row(interpolate(row({1, 2, 3, 4, 5}), 1, 2, InterpolateMode::Nearest), {1, 3},
               "nearest 5 -> 2");
    expect_row(interpolate(row({1, 2, 3, 4, 5}), 1, 2, InterpolateMode::NearestExact), {2, 4},
               "nearest-exact 5 -> 2");
    // Both axes: a 2x2 block pattern.
    Tensor sq = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
    test::expect_close(
        interpolate(sq, 4, 4, InterpolateMode::Nearest),
        Tensor::from_vector({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}), 0, 0,
        "nearest 2x2 -> 4x4");
}

TEST(Interpolate, BilinearAndBicubic) {
    // Half-pixel centres -0.25, 0.25, 0.75, 1.25; the border repeats.
    expect_row(interpolate(row({0, 10}), 1, 4, InterpolateMode::Bilinear), {0, 2.5f, 7.5f, 10},
               "bilinear 2 -> 4");
    // Bicubic at centre 0.25: taps -1..2 weigh -0.10546875, 0.87890625, 0.26171875,
    // -0.03515625 (a = -0.75); indices clamp to 0, 0, 1, 1.
    const Tensor b = interpolate(row({0, 10}), 1, 4, InterpolateMode::Bicubic);
    EXPECT_NEAR(b.to_vector()[1], 10.0 * (0.26171875 - 0.03515625), 1e-5);
    EXPECT_NEAR(b.to_vector()[2], 10.0 * (0.87890625 - 0.10546875), 1e-5);
}

TEST(Interpolate, AntialiasedDownscaleAndLanczos) {
    // 4 -> 2 with antialias: a triangle of radius 2 around centres 0.5 and 2.5, weights
    // (1, 3, 3, 1) / 8 over clamped indices.
    expect_row(interpolate(row({0, 4, 8, 12}), 1, 2, InterpolateMode::Bilinear, true),
               {0.5f * 0 + 0.375f * 4 + 0.125f * 8, 0.125f * 4 + 0.375f * 8 + 0.5f * 12},
               "antialiased bilinear 4 -> 2");
    // Without antialias the same downscale reads only the two nearest pixels.
    expect_row(interpolate(row({0, 4, 8, 12}), 1, 2, InterpolateMode::Bilinear), {2, 10},
               "bilinear 4 -> 2");
    // Normalised filters keep a constant image constant.
    Tensor flat = Tensor::full({1, 2, 5, 7}, 3.0f);
    for (auto [mode, aa] :
         {std::pair{InterpolateMode::Lanczos, false}, std::pair{InterpolateMode::Bicubic, true},
          std::pair{InterpolateMode::Bilinear, true}}) {
        test::expect_close(interpolate(flat, 11, 3, mode, aa), Tensor::full({1, 2, 11, 3}, 3.0f),
                           1e-5, 0, "constant");
    }
    EXPECT_THROW(interpolate(flat, 0, 3, InterpolateMode::Nearest), Error);
    EXPECT_THROW(interpolate(Tensor::zeros({3}, DType::F16), 2, 2, InterpolateMode::Nearest),
                 Error);
}

}  // namespace
}  // namespace sd
