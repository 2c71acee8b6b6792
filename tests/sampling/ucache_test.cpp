// UCache's decisions on hand-computed sequences.
#include "sampling/ucache.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sampling/cache_driver.h"

namespace sd {
namespace {

std::vector<test::DrivenStep> steps_of(const std::vector<float>& sigmas,
                                       const std::vector<float>& x, const std::vector<float>& o) {
    std::vector<test::DrivenStep> steps;
    for (size_t i = 0; i < x.size(); ++i) steps.push_back({sigmas[i], {x[i]}, {o[i]}});
    return steps;
}

TEST(UCache, WindowBySteps) {
    const auto [start, end] = sigma_window_by_steps(test::ten_steps(), 0.15f, 0.95f);
    EXPECT_FLOAT_EQ(start, 0.9f);
    EXPECT_NEAR(end, 0.1f, 1e-6f);
}

TEST(UCache, AbsoluteThresholdWithStreakPenalty) {
    UCacheConfig config;
    config.use_relative_threshold = false;  // limit = threshold * multiplier * |last output|
    UCache cache(config, test::ten_steps());
    // 1: learns (computed 1). 2: change 0.1, no rate: computed 2; rate 0.2 / 0.1 = 2, norm 0.8.
    // 3: 2 * 0.1 = 0.2 < 1 * 0.8 (progress 2/10: multiplier 1): reused, streak 1.
    // 4: change from step 2 0.3: 0.2 + 2 * 0.3 * 1.5 = 1.1 >= 0.8: computed (error reset);
    //    rate |0.5 - 0.8| / 0.3 = 1, norm 0.5.
    // 5: 0.1 < 0.5: reused. 6: change 0.6 -> 0.1 + 0.9 >= 0.5: computed; rate 0.3 / 0.6.
    // 7: 0.5 * 0.1 = 0.05 < 0.2: reused. 8: change 0.5 -> 0.05 + 0.25 * 1.5 >= 0.2: computed.
    // 0 and 9: outside the window.
    const std::vector<float> x = {1.0f, 1.0f, 0.9f, 0.8f, 0.6f, 0.5f, 0.0f, -0.1f, -0.5f, -0.6f};
    const std::vector<float> o = {5.0f, 1.0f, 0.8f, 9.0f, 0.5f, 9.0f, 0.2f, 9.0f, 0.0f, 0.0f};
    const test::DriveResult r = test::drive(cache, steps_of(test::ten_steps(), x, o));
    EXPECT_EQ(r.decisions, "CCCRCRCRCC");
    EXPECT_NEAR(r.cond_out[3][0], 0.8f + (0.8f - 0.9f), 1e-6f);
    EXPECT_EQ(cache.steps_skipped(), 3);
}

TEST(UCache, RelativeScaleAndEarlyThreshold) {
    UCache cache(UCacheConfig{}, test::ten_steps());
    // After step 2: rate 2, norm 0.8, output-change EMA 0.2. Step 3's estimate:
    // 2 * 0.1 / sqrt(0.8 * max(0.2 * 1.6, 1e-6)) = 0.2 / sqrt(0.256) = 0.3953 < 1: reused.
    const std::vector<float> x = {1.0f, 1.0f, 0.9f, 0.8f};
    const std::vector<float> o = {5.0f, 1.0f, 0.8f, 9.0f};
    const test::DriveResult r = test::drive(cache, steps_of(test::ten_steps(), x, o));
    EXPECT_EQ(r.decisions, "CCCR");
    EXPECT_NEAR(cache.accumulated_error(), 0.2f / std::sqrt(0.256f), 1e-5f);
    // Two computed of ten: progress 0.2 is not early; one computed would be (0.5x).
    EXPECT_FLOAT_EQ(cache.threshold(), 1.0f);
}

TEST(UCache, DecayIsClamped) {
    UCacheConfig config;
    config.error_decay_rate = 5.0f;  // taken as 1, as the reference clamps it
    config.use_relative_threshold = false;
    UCache cache(config, test::ten_steps());
    const std::vector<float> x = {1.0f, 1.0f, 0.9f, 0.8f};
    const std::vector<float> o = {5.0f, 1.0f, 0.8f, 9.0f};
    test::drive(cache, steps_of(test::ten_steps(), x, o));
    EXPECT_NEAR(cache.accumulated_error(), 0.2f, 1e-5f);
}

}  // namespace
}  // namespace sd
