// Noise schedules: how a model's training timestep t maps to the noise level sigma, as the
// denoisers of stable-diffusion.cpp (k-diffusion's external.py wrappers) define it.
//
//   DdpmSchedule      SD 1.x / 2.x / XL: the scaled-linear 1000-step DDPM schedule
//                     (beta 0.00085 .. 0.012), sigma = sqrt((1 - alphas_cumprod) / alphas_cumprod),
//                     t <-> sigma by linear interpolation of log sigma (CompVisDenoiser).
//   EdmSchedule       EDM v-prediction (sigma 0.002 .. 120, t = log(sigma) / 4).
//   FlowSchedule      SD3-style rectified flow, sigma = shift t / (1 + (shift - 1) t), t = sigma.
//   FluxFlowSchedule  FLUX: sigma = e^mu / (e^mu + 1/t - 1) with mu = shift.
#pragma once

#include <vector>

namespace sd {

constexpr int kTrainTimesteps = 1000;  // TIMESTEPS of the reference

class NoiseSchedule {
  public:
    virtual ~NoiseSchedule() = default;

    virtual float sigma_min() const = 0;
    virtual float sigma_max() const = 0;
    // The model's timestep input for a noise level.
    virtual float sigma_to_t(float sigma) const = 0;
    // The noise level of a (fractional) timestep in [0, kTrainTimesteps - 1].
    virtual float t_to_sigma(float t) const = 0;
};

// alphas_cumprod of the scaled-linear schedule in float, as stable-diffusion.cpp computes it
// (calculate_alphas_cumprod): beta_i = (sqrt(b0) + (sqrt(b1) - sqrt(b0)) i / 999)^2.
std::vector<float> ddpm_alphas_cumprod(float beta_start = 0.00085f, float beta_end = 0.012f);

// The same product kept in double with float betas, as the reference's DDIM/TCD samplers build
// their own table.
std::vector<double> ddpm_alphas_cumprod_f64();

class DdpmSchedule final : public NoiseSchedule {
  public:
    // The default SD schedule.
    DdpmSchedule();
    // A schedule from a checkpoint's own alphas_cumprod (kTrainTimesteps values in (0, 1)).
    explicit DdpmSchedule(const std::vector<float>& alphas_cumprod);

    float sigma_min() const override { return sigmas_.front(); }
    float sigma_max() const override { return sigmas_.back(); }
    float sigma_to_t(float sigma) const override;
    float t_to_sigma(float t) const override;

    const std::vector<float>& sigmas() const { return sigmas_; }
    const std::vector<float>& log_sigmas() const { return log_sigmas_; }

  private:
    std::vector<float> sigmas_;      // ascending in t
    std::vector<float> log_sigmas_;  // log of sigmas_
};

// EDMVDenoiser: t_to_sigma(t) = exp(4 t / 1000), sigma_to_t(s) = log(s) / 4.
class EdmSchedule final : public NoiseSchedule {
  public:
    explicit EdmSchedule(float sigma_min = 0.002f, float sigma_max = 120.0f);

    float sigma_min() const override { return sigma_min_; }
    float sigma_max() const override { return sigma_max_; }
    float sigma_to_t(float sigma) const override;
    float t_to_sigma(float t) const override;

  private:
    float sigma_min_;
    float sigma_max_;
};

// DiscreteFlowDenoiser: sigma(t) = time_snr_shift(shift, (t + 1) / 1000), t = 1000 sigma.
class FlowSchedule final : public NoiseSchedule {
  public:
    explicit FlowSchedule(float shift = 3.0f);

    float sigma_min() const override { return t_to_sigma(0.0f); }
    float sigma_max() const override { return t_to_sigma(kTrainTimesteps - 1); }
    float sigma_to_t(float sigma) const override;
    float t_to_sigma(float t) const override;
    float shift() const { return shift_; }

  private:
    float shift_;
};

// FluxFlowDenoiser: sigma(t) = flux_time_shift(shift, 1, (t + 1) / 1000), t = sigma.
class FluxFlowSchedule final : public NoiseSchedule {
  public:
    explicit FluxFlowSchedule(float shift = 1.0f);

    float sigma_min() const override { return t_to_sigma(0.0f); }
    float sigma_max() const override { return t_to_sigma(kTrainTimesteps - 1); }
    float sigma_to_t(float sigma) const override;
    float t_to_sigma(float t) const override;
    float shift() const { return shift_; }

  private:
    float shift_;
};

// SD3's shift: alpha t / (1 + (alpha - 1) t).
float time_snr_shift(float alpha, float t);
// FLUX's shift: e^mu / (e^mu + (1/t - 1)^sigma).
float flux_time_shift(float mu, float sigma, float t);
// FLUX.2's mu for a latent of image_seq_len tokens sampled in `steps` steps
// (Flux2FlowDenoiser compute_empirical_mu); the shift of its FluxFlowSchedule.
float flux2_empirical_mu(int image_seq_len, int steps);

}  // namespace sd
