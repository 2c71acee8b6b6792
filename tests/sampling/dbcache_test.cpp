// The reference's condition-level DBCache: its threshold and decisions, by hand.
#include "sampling/dbcache.h"

#include <gtest/gtest.h>

#include "sampling/cache_driver.h"

namespace sd {
namespace {

TEST(DbCache, ThresholdScaledForFnAndBn) {
    EXPECT_FLOAT_EQ(dbcache_threshold({8, 0, 0.25f, 8}), 0.25f);
    EXPECT_FLOAT_EQ(dbcache_threshold({12, 0, 0.25f, 8}), 0.25f * 1.08f);
    EXPECT_FLOAT_EQ(dbcache_threshold({100, 0, 0.25f, 8}), 0.5f);  // clamped at 2x
    EXPECT_FLOAT_EQ(dbcache_threshold({0, 0, 0.25f, 8}), 0.25f);   // Fn 0: unscaled
    EXPECT_FLOAT_EQ(dbcache_threshold({8, 5, 0.25f, 8}), 0.25f * 0.85f);
    EXPECT_FLOAT_EQ(dbcache_threshold({8, 20, 0.25f, 8}), 0.125f);  // clamped at 0.5x
}

TEST(DbCache, RelativeL1AgainstTheLastComputedInput) {
    DbCache cache({8, 0, 0.25f, 2}, test::ten_steps());
    // Two elements. 1: learns [1, -1]. 2: |0.1| / 2 = 0.05: reused. 3: from step 1,
    // (0.4 + 0.4) / 2 = 0.4: computed, learns [0.6, -0.6]. 4: 0.12 / 1.2 = 0.1: reused.
    // 5: 0.6 / 1.2 = 0.5: computed. 6-8: the same input: 0 < 0.25, reused. 0, 9: outside.
    // Warmup 2 changes nothing, as in the reference.
    std::vector<test::DrivenStep> steps = {
        {1.0f, {2.0f, 2.0f}, {0.0f, 0.0f}},   {0.9f, {1.0f, -1.0f}, {2.0f, 0.0f}},
        {0.8f, {0.9f, -1.0f}, {9.0f, 9.0f}},  {0.7f, {0.6f, -0.6f}, {1.0f, 1.0f}},
        {0.6f, {0.6f, -0.48f}, {9.0f, 9.0f}}, {0.5f, {0.3f, -0.3f}, {0.5f, 0.5f}},
        {0.4f, {0.3f, -0.3f}, {9.0f, 9.0f}},  {0.3f, {0.3f, -0.3f}, {9.0f, 9.0f}},
        {0.2f, {0.3f, -0.3f}, {9.0f, 9.0f}},  {0.1f, {0.3f, -0.3f}, {0.0f, 0.0f}}};
    for (size_t i = 0; i < steps.size(); ++i) steps[i].sigma = test::ten_steps()[i];
    const test::DriveResult r = test::drive(cache, steps, /*with_uncond=*/true);
    EXPECT_EQ(r.decisions, "CCRCRCRRRC");
    // Step 2 reuses step 1's output - input on each side: [0.9 + 1, -1 + 1] and +1.
    EXPECT_NEAR(r.cond_out[2][0], 1.9f, 1e-6f);
    EXPECT_NEAR(r.cond_out[2][1], 0.0f, 1e-6f);
    EXPECT_NEAR(r.uncond_out[2][0], 2.9f, 1e-6f);
    EXPECT_EQ(cache.steps_skipped(), 5);
    EXPECT_EQ(cache.warmup_remaining(), 0);
    EXPECT_NEAR(cache.accumulated_residual_diff(), 0.05f + 0.1f, 1e-6f);
}

}  // namespace
}  // namespace sd
