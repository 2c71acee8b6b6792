#include "sampling/dbcache.h"

#include <algorithm>

namespace sd {

float dbcache_threshold(const DbCacheConfig& config) {
    float t = config.residual_diff_threshold;
    if (config.Fn_compute_blocks > 0)
        t *= std::max(0.5f, std::min(2.0f, 1.0f + 0.02f * (config.Fn_compute_blocks - 8)));
    if (config.Bn_compute_blocks > 0)
        t *= std::max(0.5f, std::min(1.0f, 1.0f - 0.03f * config.Bn_compute_blocks));
    return t;
}

// The reference's fixed window for these modes.
constexpr float kStartPercent = 0.15f, kEndPercent = 0.95f;

DbCache::DbCache(const DbCacheConfig& config, const std::vector<float>& sigmas)
    : AnchoredCache(sigma_window_by_steps(sigmas, kStartPercent, kEndPercent).first,
                    sigma_window_by_steps(sigmas, kStartPercent, kEndPercent).second),
      config_(config),
      threshold_(dbcache_threshold(config)),
      warmup_remaining_(config.max_warmup_steps) {}

void DbCache::on_active_step() {
    if (warmup_remaining_ > 0) --warmup_remaining_;
}

bool DbCache::decide(const void*, const Tensor& input) {
    if (prev_input_.empty() || prev_input_.size() != static_cast<size_t>(input.numel()))
        return false;
    const std::vector<float> in = cache_math::values(input);
    const float diff = cache_math::relative_l1(prev_input_.data(), in.data(), in.size());
    if (diff < threshold_) {
        ++continuous_cached_;
        accumulated_ += diff;
        return true;
    }
    continuous_cached_ = 0;
    return false;
}

}  // namespace sd
