// The reference's DBCache / TaylorSeer / Cache-DiT as its sampler runs them: condition-level
// (CacheDitConditionState). Steps between 15% and 95% of the run (by step index) are active;
// there the anchor's input is compared with its input at its last computed step by relative
// L1 (sum |prev - x| / sum |prev|), and below the threshold (scaled for Fn and Bn) the step
// reuses each side's last output - input. As in the reference, warmup, the SCM mask, the step
// limits and the Taylor forecast do not change its decisions (it counts warmup down and stops).
#pragma once

#include "sampling/anchored_cache.h"

namespace sd {

struct DbCacheConfig {
    int Fn_compute_blocks = 8;
    int Bn_compute_blocks = 0;
    float residual_diff_threshold = 0.08f;
    int max_warmup_steps = 8;
};

// The threshold the reference compares with: residual_diff_threshold times
// clamp(1 + 0.02 (Fn - 8), 0.5, 2) when Fn > 0 and clamp(1 - 0.03 Bn, 0.5, 1) when Bn > 0.
float dbcache_threshold(const DbCacheConfig& config);

class DbCache final : public AnchoredCache {
  public:
    DbCache(const DbCacheConfig& config, const std::vector<float>& sigmas);
    float accumulated_residual_diff() const { return accumulated_; }
    int warmup_remaining() const { return warmup_remaining_; }

  private:
    void on_active_step() override;
    bool decide(const void* cond, const Tensor& input) override;
    void learn(const Tensor& input, const Tensor&) override {
        prev_input_ = cache_math::values(input);
    }

    DbCacheConfig config_;
    float threshold_;
    int warmup_remaining_;
    int continuous_cached_ = 0;
    float accumulated_ = 0.0f;
    std::vector<float> prev_input_;
};

}  // namespace sd
