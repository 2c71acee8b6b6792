// UCache (UNet, condition-level), as the reference decides: EasyCache's estimate of the
// output change, scaled by the output's size (relative) or not, grown with each reused step in
// a row, accumulated with a decay; compared with a threshold that is halved in the first fifth
// of the computed steps and 1.5x in the last fifth.
#pragma once

#include "sampling/anchored_cache.h"
#include "sampling/change_estimate.h"

namespace sd {

struct UCacheConfig {
    float reuse_threshold = 1.0f;
    float start_percent = 0.15f;
    float end_percent = 0.95f;
    float error_decay_rate = 1.0f;  // clamped to [0, 1]
    bool use_relative_threshold = true;
    bool reset_error_on_compute = true;
};

class UCache final : public AnchoredCache {
  public:
    // The window is taken from the run's sigmas by step (sigma_window_by_steps).
    UCache(const UCacheConfig& config, const std::vector<float>& sigmas);
    float accumulated_error() const { return accumulated_error_; }
    float threshold() const;  // the adaptive threshold now

  private:
    void on_new_step() override { change_.new_step(); }
    bool decide(const void* cond, const Tensor& input) override;
    void learn(const Tensor& input, const Tensor& output) override;
    float estimated_change_rate() const;

    UCacheConfig config_;
    int total_steps_;
    ChangeEstimate change_;
    float output_change_ema_ = 0.0f;
    bool has_output_change_ema_ = false;
    int computed_ = 0;  // anchor calls computed on active steps
    int consecutive_skipped_ = 0;
    float accumulated_error_ = 0.0f;
};

}  // namespace sd
