#include "sampling/anchored_cache.h"

#include <algorithm>
#include <limits>

namespace sd {

float percent_to_sigma(const NoiseSchedule& schedule, float percent) {
    if (percent <= 0.0f) return std::numeric_limits<float>::max();
    if (percent >= 1.0f) return 0.0f;
    return schedule.t_to_sigma((1.0f - percent) * (kTrainTimesteps - 1));
}

std::pair<float, float> sigma_window_by_steps(const std::vector<float>& sigmas, float start_percent,
                                              float end_percent) {
    const size_t n = sigmas.size() - 1;
    size_t start = static_cast<size_t>(start_percent * static_cast<float>(n));
    size_t end = static_cast<size_t>(end_percent * static_cast<float>(n));
    start = std::min(start, n - 1);
    end = std::min(end, n - 1);
    float a = sigmas[start], b = sigmas[end];
    if (a < b) std::swap(a, b);
    return {a, b};
}

void AnchoredCache::begin_step(int step_index, float sigma) {
    if (step_index == current_step_) return;
    current_step_ = step_index;
    skip_ = false;
    active_ = false;
    on_new_step();
    if (sigma > start_sigma_ || !(sigma > end_sigma_)) return;
    active_ = true;
    on_active_step();
}

bool AnchoredCache::has_cache(const void* cond) const {
    auto it = diffs_.find(cond);
    return it != diffs_.end() && !it->second.empty();
}

bool AnchoredCache::before_condition(const void* cond, const Tensor& input, Tensor* output) {
    if (!active_) return false;
    if (anchor_ == nullptr) anchor_ = cond;  // the first side of the first active step
    if (skip_) {
        if (!has_cache(cond) || diffs_[cond].size() != static_cast<size_t>(input.numel()))
            return false;
        *output = cache_math::apply_diff(input, diffs_[cond]);
        return true;
    }
    if (cond != anchor_ || !decide(cond, input)) return false;
    skip_ = true;
    ++skipped_;
    *output = cache_math::apply_diff(input, diffs_[cond]);
    return true;
}

void AnchoredCache::after_condition(const void* cond, const Tensor& input, const Tensor& output) {
    if (!active_) return;
    diffs_[cond] = cache_math::diff(input, output);
    if (cond == anchor_) learn(input, output);
}

}  // namespace sd
