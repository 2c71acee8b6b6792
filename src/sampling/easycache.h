// EasyCache (DiT, condition-level), as the reference decides: on an active step the anchor's
// mean |input change| times the last measured output/input change rate, relative to the last
// output's mean |value|, is summed over reused steps; below the threshold the step reuses.
#pragma once

#include "sampling/anchored_cache.h"
#include "sampling/change_estimate.h"

namespace sd {

struct EasyCacheConfig {
    float reuse_threshold = 0.2f;
    float start_percent = 0.15f;
    float end_percent = 0.95f;
};

class EasyCache final : public AnchoredCache {
  public:
    EasyCache(const EasyCacheConfig& config, const NoiseSchedule& schedule);
    float cumulative_change_rate() const { return cumulative_; }

  private:
    void on_new_step() override { change_.new_step(); }
    bool decide(const void* cond, const Tensor& input) override;
    void learn(const Tensor& input, const Tensor& output) override;

    EasyCacheConfig config_;
    ChangeEstimate change_;
    float cumulative_ = 0.0f;
};

}  // namespace sd
