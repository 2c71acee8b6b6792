// The step caches' settings (`--cache-mode`, `--cache-option`, `--scm-mask`, `--scm-policy`,
// the C API's sd_cache_params_t), settled: the mode, its options with the reference's
// defaults, and the SCM mask as numbers. sampling/step_cache.h runs them.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace sd {

enum class CacheMode { None, EasyCache, UCache, DbCache, TaylorSeer, CacheDit, Spectrum };

// What kind of network the diffusion model is: the modes that apply depend on it.
enum class CacheTarget { Unknown, UNet, DiT };

struct StepCacheParams {
    CacheMode mode = CacheMode::None;
    // easycache / ucache. reuse_threshold INFINITY: the mode's default (0.2 / 1.0).
    float reuse_threshold = INFINITY;
    float start_percent = 0.15f;
    float end_percent = 0.95f;
    float error_decay_rate = 1.0f;
    bool use_relative_threshold = true;
    bool reset_error_on_compute = true;
    // dbcache / taylorseer / cache-dit.
    int Fn_compute_blocks = 8;
    int Bn_compute_blocks = 0;
    float residual_diff_threshold = 0.08f;
    int max_warmup_steps = 8;
    int max_cached_steps = -1;
    int max_continuous_cached_steps = -1;
    int taylorseer_n_derivatives = 1;
    int taylorseer_skip_interval = 1;
    std::vector<int> scm_mask;  // per step: 1 compute, 0 may cache
    bool scm_policy_dynamic = true;
    // spectrum.
    float spectrum_w = 0.40f;
    int spectrum_m = 3;
    float spectrum_lam = 1.0f;
    int spectrum_window_size = 2;
    float spectrum_flex_window = 0.50f;
    int spectrum_warmup_steps = 4;
    float spectrum_stop_percent = 0.9f;
};

// "ucache", "easycache", ... as `--cache-mode` spells them ("disabled" for None).
const char* cache_mode_name(CacheMode mode);
// Whether a mode runs on that kind of network: ucache on UNets, easycache / dbcache /
// taylorseer / cache-dit on DiTs, spectrum on both.
bool cache_mode_applies(CacheMode mode, CacheTarget target);
// "1,0,1" -> {1, 0, 1}; throws sd::Error naming scm_mask for anything else than integers.
std::vector<int> parse_scm_mask(const std::string& text);
// Throws sd::Error naming the option for a value the reference refuses (easycache / ucache:
// threshold >= 0, 0 <= start < end <= 1) or one the caches cannot run with.
void check_step_cache_params(const StepCacheParams& p);

}  // namespace sd
