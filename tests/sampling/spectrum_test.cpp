// Spectrum's forecast schedule and its two predictors, by hand.
#include "sampling/spectrum.h"

#include <gtest/gtest.h>

#include <string>

namespace sd {
namespace {

Tensor scalar(float v) {
    return Tensor::from_vector({1, 1}, {v});
}

// Runs `calls` denoise calls; a computed call's denoised value is f(call index).
std::string schedule_of(Spectrum& s, int calls) {
    std::string out;
    for (int i = 0; i < calls; ++i) {
        if (s.should_predict()) {
            s.predict({1, 1});
            out += 'F';
        } else {
            s.update(scalar(static_cast<float>(i)));
            out += 'C';
        }
    }
    return out;
}

TEST(Spectrum, ForecastScheduleWidensWithTheWindow) {
    // Defaults over 20 steps: 4 warmup calls; then window 2 (F C), 2.5 (F C), 3 (F F C),
    // 3.5 (F F C), 4 (F F F C); from call 19 (count 18 = 0.9 * 20) everything is computed.
    Spectrum s(SpectrumConfig{}, 20);
    EXPECT_EQ(schedule_of(s, 20), "CCCCFCFCFFCFFCFFFCCC");
    EXPECT_EQ(s.steps_skipped(), 9);
}

TEST(Spectrum, TaylorOnly) {
    SpectrumConfig c;
    c.w = 0.0f;  // last + 0.5 (last - previous)
    Spectrum s(c, 20);
    for (float v : {0.0f, 1.0f, 2.0f, 3.0f}) s.update(scalar(v));
    ASSERT_TRUE(s.should_predict());
    EXPECT_FLOAT_EQ(s.predict({1, 1}).item(), 3.5f);
}

TEST(Spectrum, ChebyshevFitIsExactOnALineWithoutRidge) {
    SpectrumConfig c;
    c.w = 1.0f;
    c.m = 1;
    c.lam = 0.0f;
    Spectrum s(c, 20);
    // Values equal to tau = count / 50 * 2 - 1; the forecast at count 4 is tau(4) = -0.84.
    for (int i = 0; i < 4; ++i) s.update(scalar(static_cast<float>(i) / 50.0f * 2.0f - 1.0f));
    EXPECT_NEAR(s.predict({1, 1}).item(), -0.84f, 1e-4f);
}

}  // namespace
}  // namespace sd
