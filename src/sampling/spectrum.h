// Spectrum (UNet and DiT), as the reference forecasts: after a warmup of computed steps, the
// denoised (x0) prediction of some calls is forecast instead of computed, as a blend of a
// ridge-regressed Chebyshev fit over the last K denoised values (K = max(m + 1, 6)) and a
// Taylor step from the last two; the share of forecast calls grows with the window.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace sd {

struct SpectrumConfig {
    float w = 0.40f;  // weight of the Chebyshev fit (1 - w: the Taylor step)
    int m = 3;        // Chebyshev degree
    float lam = 1.0f;
    int window_size = 2;
    float flex_window = 0.50f;
    int warmup_steps = 4;
    float stop_percent = 0.9f;
};

class Spectrum {
  public:
    Spectrum(const SpectrumConfig& config, size_t total_steps);
    // Whether this call is forecast (asked once per denoise call, before the network).
    bool should_predict() const;
    // The forecast denoised value (x's shape), counted as a call.
    Tensor predict(const Shape& shape);
    // A computed denoised value joins the history.
    void update(const Tensor& denoised);
    int steps_skipped() const { return skipped_; }

  private:
    std::vector<float> fit_weights() const;  // per history entry

    SpectrumConfig config_;
    int cnt_ = 0, num_cached_ = 0, skipped_ = 0;
    float curr_ws_;
    int K_;
    int stop_step_;
    std::vector<std::vector<float>> history_;
    std::vector<float> taus_;
};

}  // namespace sd
