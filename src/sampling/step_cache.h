// One sampling run's step cache (`--cache-mode`): the generation loop asks it around every
// diffusion-model call (condition-level modes) and every denoise call (spectrum), and it keeps
// what it decided per step: computed, reused or forecast. Made per sampling run (each image of
// a batch and the hires pass start afresh, as the reference's); nothing is process-wide.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sampling/cache_params.h"
#include "sampling/condition_cache.h"
#include "sampling/schedule.h"
#include "sampling/spectrum.h"

namespace sd {

enum class StepDecision : char { Computed = 'C', Reused = 'R', Forecast = 'F' };

// Throws sd::Error naming the mode and the family when the mode does not apply to the
// network (cache_mode_applies), and for parameters check_step_cache_params refuses.
void check_step_cache(const StepCacheParams& params, CacheTarget target, const std::string& family);

class StepCache {
  public:
    // A disabled cache (CacheMode::None) answers nothing and logs nothing.
    StepCache(const StepCacheParams& params, const NoiseSchedule& schedule,
              const std::vector<float>& sigmas);
    ~StepCache();

    // The start of a denoise call at `step` (DenoiseCall::step: 1-based, negative for a call
    // that is not its step's last).
    void begin_call(int step, float sigma);
    // Spectrum: whether this call's denoised value is forecast, and the forecast.
    bool should_forecast() const;
    Tensor forecast(const Shape& shape);
    // Condition-level: in place of the network (true, *output set) or not.
    bool before_condition(const void* cond, const Tensor& input, Tensor* output);
    void after_condition(const void* cond, const Tensor& input, const Tensor& output);
    // This call reuses the cache (further passes of the step, such as skip-layer guidance's,
    // are left out as the reference does).
    bool step_skipped() const;
    // The end of a denoise call: its denoised value (spectrum's history) and the decision.
    void end_call(const Tensor& denoised);

    const std::vector<StepDecision>& decisions() const { return decisions_; }
    // "CCRCR...", one letter a step.
    std::string decision_string() const;
    // The reference's summary ("UCache skipped 3/10 steps (1.43x estimated speedup)") and
    // the per-step decisions.
    void log_summary() const;

  private:
    StepCacheParams params_;
    size_t total_steps_;
    std::unique_ptr<ConditionCache> condition_;
    std::unique_ptr<Spectrum> spectrum_;
    int step_ = 0;
    bool forecast_ = false;
    std::vector<StepDecision> decisions_;
};

}  // namespace sd
