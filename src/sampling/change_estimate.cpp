#include "sampling/change_estimate.h"

#include <cmath>

#include "sampling/condition_cache.h"

namespace sd {

bool ChangeEstimate::measure(const Tensor& input) {
    if (prev_input_.empty() || prev_output_.empty()) return false;
    if (prev_input_.size() != static_cast<size_t>(input.numel())) return false;
    const std::vector<float> in = cache_math::values(input);
    input_change_ = cache_math::mean_abs_diff(in.data(), prev_input_.data(), in.size());
    has_input_change_ = true;
    return true;
}

float ChangeEstimate::learn(const Tensor& input, const Tensor& output) {
    prev_input_ = cache_math::values(input);
    const std::vector<float> out = cache_math::values(output);
    float output_change = 0.0f;
    if (prev_output_.size() == out.size())
        output_change = cache_math::mean_abs_diff(out.data(), prev_output_.data(), out.size());
    prev_output_ = out;
    output_norm_ = cache_math::mean_abs(out.data(), out.size());
    if (has_input_change_ && input_change_ > 0.0f && output_change > 0.0f) {
        const float rate = output_change / input_change_;
        if (std::isfinite(rate)) {
            rate_ = rate;
            has_rate_ = true;
        }
    }
    has_input_change_ = false;
    return output_change;
}

}  // namespace sd
