// The run's step cache: which modes apply where, option checks, decisions and the log.
#include "sampling/step_cache.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "sampling/cache_driver.h"

namespace sd {
namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(StepCache, ModeMustApplyToTheNetwork) {
    StepCacheParams p;
    p.mode = CacheMode::DbCache;
    const std::string e = error_of([&] { check_step_cache(p, CacheTarget::UNet, "SD 1.x"); });
    EXPECT_NE(e.find("dbcache"), std::string::npos) << e;
    EXPECT_NE(e.find("SD 1.x"), std::string::npos) << e;
    p.mode = CacheMode::UCache;
    EXPECT_NE(error_of([&] { check_step_cache(p, CacheTarget::DiT, "FLUX"); }).find("FLUX"),
              std::string::npos);
    EXPECT_EQ(error_of([&] { check_step_cache(p, CacheTarget::UNet, "SD 1.x"); }), "");
    p.mode = CacheMode::Spectrum;
    EXPECT_EQ(error_of([&] { check_step_cache(p, CacheTarget::UNet, "SD 1.x"); }), "");
    EXPECT_EQ(error_of([&] { check_step_cache(p, CacheTarget::DiT, "FLUX"); }), "");
    EXPECT_NE(error_of([&] { check_step_cache(p, CacheTarget::Unknown, "X"); }), "");
    for (CacheMode m : {CacheMode::EasyCache, CacheMode::TaylorSeer, CacheMode::CacheDit}) {
        EXPECT_TRUE(cache_mode_applies(m, CacheTarget::DiT));
        EXPECT_FALSE(cache_mode_applies(m, CacheTarget::UNet));
    }
}

TEST(StepCache, OutOfRangeOptionsNamed) {
    StepCacheParams p;
    p.mode = CacheMode::UCache;
    p.reuse_threshold = -1.0f;
    EXPECT_NE(error_of([&] { check_step_cache_params(p); }).find("threshold"), std::string::npos);
    p.reuse_threshold = 1.0f;
    p.start_percent = 0.9f;
    p.end_percent = 0.5f;
    EXPECT_NE(error_of([&] { check_step_cache_params(p); }).find("start"), std::string::npos);
    p.mode = CacheMode::Spectrum;  // start / end are easycache's and ucache's
    EXPECT_EQ(error_of([&] { check_step_cache_params(p); }), "");
    p.spectrum_m = -1;
    EXPECT_NE(error_of([&] { check_step_cache_params(p); }).find(" m "), std::string::npos);
}

TEST(StepCache, ScmMask) {
    EXPECT_EQ(parse_scm_mask("1,0,0,1"), (std::vector<int>{1, 0, 0, 1}));
    EXPECT_TRUE(parse_scm_mask("").empty());
    EXPECT_NE(error_of([] { parse_scm_mask("1,x"); }).find("scm_mask"), std::string::npos);
    EXPECT_NE(error_of([] { parse_scm_mask("1,,0"); }).find("scm_mask"), std::string::npos);
}

TEST(StepCache, RecordsDecisionsPerStep) {
    StepCacheParams p;
    p.mode = CacheMode::DbCache;
    p.residual_diff_threshold = 0.25f;
    const std::vector<float> sigmas = {1.0f, 0.75f, 0.5f, 0.25f, 0.0f};
    const test::LinearSchedule schedule;
    StepCache cache(p, schedule, sigmas);
    const int key = 0;
    // 4 steps: window sigmas[0] .. sigmas[3] (exclusive): steps 0-2 active. Same input
    // every step: step 0 learns, steps 1 and 2 reuse; step 3 is outside.
    const Tensor x = Tensor::from_vector({1, 1}, {1.0f});
    for (int step = 1; step <= 4; ++step) {
        cache.begin_call(step, sigmas[step - 1]);
        ASSERT_FALSE(cache.should_forecast());
        Tensor out;
        if (!cache.before_condition(&key, x, &out)) {
            out = Tensor::from_vector({1, 1}, {2.0f});
            cache.after_condition(&key, x, out);
        }
        cache.end_call(out);
    }
    EXPECT_EQ(cache.decision_string(), "CRRC");
    cache.log_summary();
}

// TaylorSeer and Cache-DIT (DBCache + TaylorSeer) decide at the condition level as the
// reference's CacheDIT condition state does, DBCache's relative-L1 rule; by hand, one element,
// threshold 0.25, sigmas 1 .. 0 in 6 steps (steps 1-4 in the window): step 1 learns at x = 1;
// step 2: |1.1 - 1| / 1 = 0.1, reused; step 3: |1.5 - 1| / 1 = 0.5, computed, learns 1.5;
// step 4: |1.6 - 1.5| / 1.5 = 0.067, reused; step 5 is outside the window.
TEST(StepCache, TaylorSeerAndCacheDitDecideAsDbCache) {
    const std::vector<float> sigmas = {1.0f, 0.8f, 0.6f, 0.4f, 0.2f, 0.0f};
    const std::vector<float> inputs = {1.0f, 1.1f, 1.5f, 1.6f, 1.6f};
    const test::LinearSchedule schedule;
    for (CacheMode mode : {CacheMode::DbCache, CacheMode::TaylorSeer, CacheMode::CacheDit}) {
        StepCacheParams p;
        p.mode = mode;
        p.residual_diff_threshold = 0.25f;
        StepCache cache(p, schedule, sigmas);
        const int key = 0;
        for (int step = 1; step <= 5; ++step) {
            cache.begin_call(step, sigmas[step - 1]);
            const Tensor x = Tensor::from_vector({1, 1}, {inputs[step - 1]});
            Tensor out;
            if (!cache.before_condition(&key, x, &out)) {
                out = Tensor::from_vector({1, 1}, {2.0f * inputs[step - 1]});
                cache.after_condition(&key, x, out);
            }
            // A reused step is the input plus the last computed output - input.
            if (step == 4) {
                EXPECT_NEAR(out.data<float>()[0], 1.6f + 1.5f, 1e-6f);
            }
            cache.end_call(out);
        }
        EXPECT_EQ(cache.decision_string(), "CRCRC") << cache_mode_name(mode);
    }
}

TEST(StepCache, DisabledAnswersNothing) {
    const test::LinearSchedule schedule;
    StepCache cache(StepCacheParams{}, schedule, {1.0f, 0.0f});
    cache.begin_call(1, 1.0f);
    Tensor out;
    EXPECT_FALSE(cache.before_condition(&out, Tensor::full({1}, 1.0f), &out));
    EXPECT_FALSE(cache.should_forecast());
    cache.end_call(Tensor::full({1}, 1.0f));
    EXPECT_EQ(cache.decision_string(), "");
}

}  // namespace
}  // namespace sd
