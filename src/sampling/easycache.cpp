#include "sampling/easycache.h"

namespace sd {

EasyCache::EasyCache(const EasyCacheConfig& config, const NoiseSchedule& schedule)
    : AnchoredCache(percent_to_sigma(schedule, config.start_percent),
                    percent_to_sigma(schedule, config.end_percent)),
      config_(config) {}

bool EasyCache::decide(const void* cond, const Tensor& input) {
    if (!has_cache(cond) || !change_.measure(input) || !change_.ready()) return false;
    cumulative_ += change_.estimated_output_change() / change_.output_norm();
    if (cumulative_ < config_.reuse_threshold) return true;
    cumulative_ = 0.0f;
    return false;
}

void EasyCache::learn(const Tensor& input, const Tensor& output) {
    change_.learn(input, output);
    cumulative_ = 0.0f;
}

}  // namespace sd
