// Runs a condition-level step cache over hand-made steps: one-element (or small) inputs, a
// made-up network whose outputs the test gives, and one or two sides of guidance. Returns
// the decisions ("C" computed, "R" reused, one letter a step) and every side's outputs.
#pragma once

#include <string>
#include <vector>

#include "sampling/condition_cache.h"
#include "sampling/schedule.h"

namespace sd::test {

// sigma = t / 1000: start 15% -> t 849.15 -> 0.84915, end 95% -> t 49.95 -> 0.04995.
class LinearSchedule final : public NoiseSchedule {
  public:
    float sigma_min() const override { return 0.0f; }
    float sigma_max() const override { return 1.0f; }
    float sigma_to_t(float sigma) const override { return sigma * 1000.0f; }
    float t_to_sigma(float t) const override { return t / 1000.0f; }
};

// 10 steps, sigmas 1.0, 0.9, ..., 0.1, 0: the step window of 15%..95% is sigmas[1] = 0.9 down
// to (not including) sigmas[9] = 0.1, so steps 1..8 are active.
inline std::vector<float> ten_steps() {
    std::vector<float> s;
    for (int i = 0; i <= 10; ++i) s.push_back(1.0f - 0.1f * static_cast<float>(i));
    s.back() = 0.0f;
    return s;
}

struct DrivenStep {
    float sigma;
    std::vector<float> input;
    std::vector<float> output;  // what the network answers for the positive side
};

struct DriveResult {
    std::string decisions;
    std::vector<std::vector<float>> cond_out, uncond_out;
};

// The negative side's network answers output + 1 (when with_uncond).
inline DriveResult drive(ConditionCache& cache, const std::vector<DrivenStep>& steps,
                         bool with_uncond = false) {
    DriveResult r;
    const int keys[2] = {0, 1};
    for (size_t i = 0; i < steps.size(); ++i) {
        const DrivenStep& s = steps[i];
        const int64_t n = static_cast<int64_t>(s.input.size());
        const Tensor in = Tensor::from_vector({1, n}, s.input);
        cache.begin_step(static_cast<int>(i), s.sigma);
        bool reused = false;
        for (int side = 0; side < (with_uncond ? 2 : 1); ++side) {
            Tensor out;
            if (cache.before_condition(&keys[side], in, &out)) {
                reused = true;
            } else {
                std::vector<float> o = s.output;
                for (float& v : o) v += static_cast<float>(side);
                out = Tensor::from_vector({1, n}, o);
                cache.after_condition(&keys[side], in, out);
            }
            (side == 0 ? r.cond_out : r.uncond_out).push_back(out.to_vector());
        }
        r.decisions += reused ? 'R' : 'C';
    }
    return r;
}

}  // namespace sd::test
