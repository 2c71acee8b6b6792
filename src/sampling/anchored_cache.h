// What the condition-level caches share (the reference's EasyCache / UCache / CacheDIT
// condition states): the window of sigmas where a step may reuse, the anchor side whose input
// decides, and each side's last output - input.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "sampling/condition_cache.h"
#include "sampling/schedule.h"

namespace sd {

// The noise level at `percent` of the schedule's timesteps (t = (1 - percent) * 999);
// percent <= 0 gives +inf, >= 1 gives 0.
float percent_to_sigma(const NoiseSchedule& schedule, float percent);
// {start, end} sigmas at step floor(percent * steps) of the run's list (clamped to the last
// step), larger first.
std::pair<float, float> sigma_window_by_steps(const std::vector<float>& sigmas, float start_percent,
                                              float end_percent);

class AnchoredCache : public ConditionCache {
  public:
    void begin_step(int step_index, float sigma) override;
    bool before_condition(const void* cond, const Tensor& input, Tensor* output) override;
    void after_condition(const void* cond, const Tensor& input, const Tensor& output) override;
    bool step_skipped() const override { return active_ && skip_; }
    int steps_skipped() const override { return skipped_; }

  protected:
    // A step is active when end_sigma < sigma <= start_sigma.
    AnchoredCache(float start_sigma, float end_sigma)
        : start_sigma_(start_sigma), end_sigma_(end_sigma) {}
    virtual void on_new_step() {}     // every step, before the window test
    virtual void on_active_step() {}  // a step inside the window
    // The anchor's question on an active step: reuse the cache for this step?
    virtual bool decide(const void* cond, const Tensor& input) = 0;
    // The anchor was computed on an active step.
    virtual void learn(const Tensor& input, const Tensor& output) = 0;
    bool has_cache(const void* cond) const;

  private:
    float start_sigma_, end_sigma_;
    int current_step_ = -1;
    bool active_ = false, skip_ = false;
    int skipped_ = 0;
    const void* anchor_ = nullptr;
    std::unordered_map<const void*, std::vector<float>> diffs_;
};

}  // namespace sd
