// EasyCache's and UCache's picture of the anchor's network between computed steps: the
// mean |input change| since its last computed step, times how much its output moved per unit
// of input change last time, estimates how far its output has moved now.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace sd {

class ChangeEstimate {
  public:
    void new_step() { has_input_change_ = false; }
    // Measures the input change against the last computed input; false when there is none
    // of this size yet.
    bool measure(const Tensor& input);
    // Whether the estimate can be made (a rate, a last output of some size, an input change).
    bool ready() const { return output_norm_ > 0.0f && has_rate_ && input_change_ > 0.0f; }
    float estimated_output_change() const { return rate_ * input_change_; }
    float output_norm() const { return output_norm_; }  // mean |last computed output|
    // A computed call: its input and output become the reference; returns the mean |output
    // change| since the previous computed call (0 for the first).
    float learn(const Tensor& input, const Tensor& output);

  private:
    std::vector<float> prev_input_, prev_output_;
    float output_norm_ = 0.0f;
    float rate_ = 0.0f;  // the relative transformation rate: output change / input change
    bool has_rate_ = false;
    float input_change_ = 0.0f;
    bool has_input_change_ = false;
};

}  // namespace sd
