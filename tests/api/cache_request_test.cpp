// sd_cache_params_t into the settled StepCacheParams: every field, the mask, bad values named.
#include "api/cache_request.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace sd::api {
namespace {

TEST(CacheRequest, DefaultsAndFields) {
    sd_cache_params_t c;
    sd_cache_params_init(&c);
    StepCacheParams p = to_step_cache(c);
    EXPECT_EQ(p.mode, CacheMode::None);
    EXPECT_EQ(p.reuse_threshold, INFINITY);  // the mode's own default
    EXPECT_EQ(p.Fn_compute_blocks, 8);
    EXPECT_FLOAT_EQ(p.residual_diff_threshold, 0.08f);
    EXPECT_EQ(p.spectrum_warmup_steps, 4);
    c.mode = SD_CACHE_CACHE_DIT;
    c.scm_mask = "1,1,0,0,1";
    c.scm_policy_dynamic = false;
    c.Bn_compute_blocks = 2;
    p = to_step_cache(c);
    EXPECT_EQ(p.mode, CacheMode::CacheDit);
    EXPECT_EQ(p.scm_mask, (std::vector<int>{1, 1, 0, 0, 1}));
    EXPECT_FALSE(p.scm_policy_dynamic);
    EXPECT_EQ(p.Bn_compute_blocks, 2);
}

TEST(CacheRequest, BadValuesNamed) {
    sd_cache_params_t c;
    sd_cache_params_init(&c);
    c.mode = SD_CACHE_DBCACHE;
    c.scm_mask = "1,0,yes";
    try {
        to_step_cache(c);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("scm_mask"), std::string::npos) << e.what();
    }
    c.scm_mask = nullptr;
    c.mode = static_cast<sd_cache_mode_t>(42);
    try {
        to_step_cache(c);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cache.mode"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace sd::api
