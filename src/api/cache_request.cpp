#include "api/cache_request.h"

#include "api/c_enum.h"
#include "base/error.h"

namespace sd::api {
namespace {

CacheMode mode_of(int mode) {
    switch (mode) {
        case SD_CACHE_DISABLED:
            return CacheMode::None;
        case SD_CACHE_EASYCACHE:
            return CacheMode::EasyCache;
        case SD_CACHE_UCACHE:
            return CacheMode::UCache;
        case SD_CACHE_DBCACHE:
            return CacheMode::DbCache;
        case SD_CACHE_TAYLORSEER:
            return CacheMode::TaylorSeer;
        case SD_CACHE_CACHE_DIT:
            return CacheMode::CacheDit;
        case SD_CACHE_SPECTRUM:
            return CacheMode::Spectrum;
    }
    fail("cache.mode %d is not a cache mode", mode);
}

}  // namespace

StepCacheParams to_step_cache(const sd_cache_params_t& c) {
    StepCacheParams p;
    p.mode = mode_of(c_enum_int(c.mode));
    p.reuse_threshold = c.reuse_threshold;
    p.start_percent = c.start_percent;
    p.end_percent = c.end_percent;
    p.error_decay_rate = c.error_decay_rate;
    p.use_relative_threshold = c.use_relative_threshold;
    p.reset_error_on_compute = c.reset_error_on_compute;
    p.Fn_compute_blocks = c.Fn_compute_blocks;
    p.Bn_compute_blocks = c.Bn_compute_blocks;
    p.residual_diff_threshold = c.residual_diff_threshold;
    p.max_warmup_steps = c.max_warmup_steps;
    p.max_cached_steps = c.max_cached_steps;
    p.max_continuous_cached_steps = c.max_continuous_cached_steps;
    p.taylorseer_n_derivatives = c.taylorseer_n_derivatives;
    p.taylorseer_skip_interval = c.taylorseer_skip_interval;
    if (c.scm_mask && *c.scm_mask) p.scm_mask = parse_scm_mask(c.scm_mask);
    p.scm_policy_dynamic = c.scm_policy_dynamic;
    p.spectrum_w = c.spectrum_w;
    p.spectrum_m = c.spectrum_m;
    p.spectrum_lam = c.spectrum_lam;
    p.spectrum_window_size = c.spectrum_window_size;
    p.spectrum_flex_window = c.spectrum_flex_window;
    p.spectrum_warmup_steps = c.spectrum_warmup_steps;
    p.spectrum_stop_percent = c.spectrum_stop_percent;
    return p;
}

}  // namespace sd::api
