// EasyCache's decisions on a hand-computed sequence.
#include "sampling/easycache.h"

#include <gtest/gtest.h>

#include "sampling/cache_driver.h"

namespace sd {
namespace {

TEST(EasyCache, WindowFromTheSchedule) {
    const test::LinearSchedule s;
    EXPECT_NEAR(percent_to_sigma(s, 0.15f), 0.84915f, 1e-5f);
    EXPECT_NEAR(percent_to_sigma(s, 0.95f), 0.04995f, 1e-5f);
    EXPECT_GT(percent_to_sigma(s, 0.0f), 1e30f);
    EXPECT_EQ(percent_to_sigma(s, 1.0f), 0.0f);
}

TEST(EasyCache, ReusesWhileTheEstimatedChangeStaysUnderTheThreshold) {
    const test::LinearSchedule schedule;
    EasyCache cache(EasyCacheConfig{0.2f, 0.15f, 0.95f}, schedule);
    // step 0: sigma 1 > 0.849, outside the window. 1: first active, learns x 1 -> 2.
    // 2: input change 0.1, no rate yet: computed; rate = |1.9 - 2| / 0.1 = 1, norm 1.9.
    // 3: change 0.1 -> 1 * 0.1 / 1.9 = 0.053 < 0.2: reused, 0.8 + (1.9 - 0.9) = 1.8.
    // 4: change from step 2's input 0.4 -> 0.053 + 0.211 = 0.263 >= 0.2: computed.
    // 5: sigma 0.02 <= 0.04995, outside: computed.
    const std::vector<test::DrivenStep> steps = {{1.0f, {1.0f}, {3.0f}}, {0.8f, {1.0f}, {2.0f}},
                                                 {0.6f, {0.9f}, {1.9f}}, {0.4f, {0.8f}, {9.0f}},
                                                 {0.2f, {0.5f}, {1.0f}}, {0.02f, {0.4f}, {0.3f}}};
    const test::DriveResult r = test::drive(cache, steps, /*with_uncond=*/true);
    EXPECT_EQ(r.decisions, "CCCRCC");
    EXPECT_NEAR(r.cond_out[3][0], 1.8f, 1e-6f);
    EXPECT_NEAR(r.uncond_out[3][0], 2.8f, 1e-6f);  // the negative side's own diff (+1)
    EXPECT_EQ(cache.steps_skipped(), 1);
}

TEST(EasyCache, ThresholdZeroNeverReuses) {
    const test::LinearSchedule schedule;
    EasyCache cache(EasyCacheConfig{0.0f, 0.0f, 1.0f}, schedule);
    std::vector<test::DrivenStep> steps;
    for (int i = 0; i < 6; ++i)
        steps.push_back({0.9f - 0.1f * i, {1.0f - 0.01f * i}, {2.0f - 0.01f * i}});
    EXPECT_EQ(test::drive(cache, steps).decisions, "CCCCCC");
}

}  // namespace
}  // namespace sd
