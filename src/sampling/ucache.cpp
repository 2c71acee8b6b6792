#include "sampling/ucache.h"

#include <algorithm>
#include <cmath>

namespace sd {
namespace {

constexpr float kEarlyMultiplier = 0.5f, kLateMultiplier = 1.5f;
constexpr float kRelativeNormGain = 1.6f;

UCacheConfig clamped(UCacheConfig c) {
    c.error_decay_rate = std::max(0.0f, std::min(1.0f, c.error_decay_rate));
    return c;
}

}  // namespace

UCache::UCache(const UCacheConfig& config, const std::vector<float>& sigmas)
    : AnchoredCache(sigma_window_by_steps(sigmas, config.start_percent, config.end_percent).first,
                    sigma_window_by_steps(sigmas, config.start_percent, config.end_percent).second),
      config_(clamped(config)),
      total_steps_(static_cast<int>(sigmas.size()) - 1) {}

float UCache::threshold() const {
    const int total = total_steps_ > 0 ? total_steps_ : std::max(20, computed_ * 2);
    float progress = static_cast<float>(computed_) / static_cast<float>(total);
    progress = std::max(0.0f, std::min(1.0f, progress));
    float multiplier = 1.0f;
    if (progress < 0.2f)
        multiplier = kEarlyMultiplier;
    else if (progress > 0.8f)
        multiplier = kLateMultiplier;
    return config_.reuse_threshold * multiplier;
}

// The estimated output change of this step, as a rate (see the header).
float UCache::estimated_change_rate() const {
    const float change = change_.estimated_output_change();
    float r = change;
    if (config_.use_relative_threshold) {
        const float base = std::max(change_.output_norm(), 1e-6f);
        const float dyn =
            has_output_change_ema_
                ? std::max(output_change_ema_ * std::max(1.0f, kRelativeNormGain), 1e-6f)
                : base;
        r = change / std::sqrt(base * dyn);
    }
    // Long streaks of reuse extrapolate further: each one in a row weighs more.
    return r * (1.0f + 0.50f * static_cast<float>(consecutive_skipped_));
}

bool UCache::decide(const void* cond, const Tensor& input) {
    if (!has_cache(cond) || !change_.measure(input) || !change_.ready()) return false;
    accumulated_error_ = accumulated_error_ * config_.error_decay_rate + estimated_change_rate();
    float limit = threshold();
    if (!config_.use_relative_threshold) limit *= change_.output_norm();
    if (accumulated_error_ < limit) {
        ++consecutive_skipped_;
        return true;
    }
    if (config_.reset_error_on_compute) accumulated_error_ = 0.0f;
    return false;
}

void UCache::learn(const Tensor& input, const Tensor& output) {
    ++computed_;
    consecutive_skipped_ = 0;
    const float output_change = change_.learn(input, output);
    if (std::isfinite(output_change) && output_change > 0.0f) {
        output_change_ema_ = has_output_change_ema_
                                 ? 0.8f * output_change_ema_ + 0.2f * output_change
                                 : output_change;
        has_output_change_ema_ = true;
    }
}

}  // namespace sd
