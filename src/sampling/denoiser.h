// Denoisers: turn a network's raw output into the denoised x0 prediction a sampler steps with,
// as stable-diffusion.cpp's CompVisDenoiser / CompVisVDenoiser / EDMVDenoiser /
// DiscreteFlowDenoiser / FluxFlowDenoiser (k-diffusion external.py) do.
//
// For a noisy latent x at noise level sigma the pipeline calls the network as
//     out = model(x * c_in, t = sigma_to_t(sigma), ...)
// and the denoised prediction is
//     denoised = out * c_out + x * c_skip
// (classifier-free guidance mixes the raw outputs before this step, as the reference does).
#pragma once

#include <memory>

#include "sampling/schedule.h"
#include "stable-diffusion.h"
#include "tensor/tensor.h"

namespace sd {

using Prediction = prediction_t;

struct Scalings {
    float c_skip;
    float c_out;
    float c_in;
};

class Denoiser {
  public:
    Denoiser(Prediction prediction, std::unique_ptr<NoiseSchedule> schedule);

    Prediction prediction() const { return prediction_; }
    const NoiseSchedule& schedule() const { return *schedule_; }
    // Rectified-flow models (FLOW_PRED, FLUX_FLOW_PRED).
    bool is_flow() const;

    Scalings scalings(float sigma) const;
    float sigma_to_t(float sigma) const { return schedule_->sigma_to_t(sigma); }

    // out * c_out + x * c_skip, element by element (shapes must match).
    Tensor denoised(const Tensor& model_out, const Tensor& x, float sigma) const;
    // The sampler's start from noise: latent + noise * sigma, or for flow models
    // latent * (1 - sigma) + noise * sigma (noise_scaling of the reference).
    Tensor noise_scaling(float sigma, const Tensor& noise, const Tensor& latent) const;
    // The latent the VAE decodes from a sampler's result: x, or x / (1 - sigma) for flow models
    // (inverse_noise_scaling; sigma is the last sigma, normally 0).
    Tensor inverse_noise_scaling(float sigma, const Tensor& latent) const;

  private:
    Prediction prediction_;
    std::unique_ptr<NoiseSchedule> schedule_;
};

// The denoiser of a prediction type:
//   EPS_PRED, V_PRED                 DdpmSchedule (alphas_cumprod: the checkpoint's own when it has
//                                    1000 of them, else the default scaled-linear schedule);
//   EDM_V_PRED                       EdmSchedule(0.002, 120);
//   FLOW_PRED                        FlowSchedule(flow_shift), the reference default 3.0;
//   FLUX_FLOW_PRED (FLUX.1, FLUX.2)  FluxFlowSchedule(flow_shift): the reference uses 1.15 for
//                                    FLUX models with guidance_in (dev), else 1.0, and for FLUX.2
//                                    flux2_empirical_mu(tokens, steps).
// flow_shift is ignored for the others. Throws sd::Error for PREDICTION_COUNT or an unknown value.
std::unique_ptr<Denoiser> make_denoiser(Prediction prediction, float flow_shift = 3.0f,
                                        const std::vector<float>& alphas_cumprod = {});

// `--prediction`: the user's choice when given (not PREDICTION_COUNT), else the model's.
Prediction resolve_prediction(Prediction requested, Prediction model_default);

}  // namespace sd
