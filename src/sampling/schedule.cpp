// Noise schedules: DDPM (CompVis), EDM, rectified flow (SD3, FLUX).
#include "sampling/schedule.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace sd {

namespace {

constexpr float kDefaultBetaStart = 0.00085f;
constexpr float kDefaultBetaEnd = 0.012f;
constexpr int kMaxT = kTrainTimesteps - 1;

// sqrt(beta_i) of the scaled-linear schedule, in float (calculate_alphas_cumprod).
float sqrt_beta(int i, float beta_start, float beta_end) {
    const float ls = std::sqrt(beta_start);
    const float le = std::sqrt(beta_end);
    return ls + (le - ls) * (static_cast<float>(i) / static_cast<float>(kMaxT));
}

}  // namespace

std::vector<float> ddpm_alphas_cumprod(float beta_start, float beta_end) {
    std::vector<float> out(kTrainTimesteps);
    float product = 1.0f;
    for (int i = 0; i < kTrainTimesteps; ++i) {
        const float b = sqrt_beta(i, beta_start, beta_end);
        product *= 1.0f - std::pow(b, 2.0f);  // ldm make_beta_schedule("linear"): linspace(...)^2
        out[i] = product;
    }
    return out;
}

std::vector<double> ddpm_alphas_cumprod_f64() {
    std::vector<double> out(kTrainTimesteps);
    double product = 1.0;
    for (int i = 0; i < kTrainTimesteps; ++i) {
        const double b = sqrt_beta(i, kDefaultBetaStart, kDefaultBetaEnd);
        product *= 1.0 - b * b;
        out[i] = product;
    }
    return out;
}

DdpmSchedule::DdpmSchedule() : DdpmSchedule(ddpm_alphas_cumprod()) {}

DdpmSchedule::DdpmSchedule(const std::vector<float>& alphas_cumprod) {
    SD_CHECK(alphas_cumprod.size() == static_cast<size_t>(kTrainTimesteps),
             "alphas_cumprod has %zu values, expected %d", alphas_cumprod.size(), kTrainTimesteps);
    sigmas_.resize(kTrainTimesteps);
    log_sigmas_.resize(kTrainTimesteps);
    for (int i = 0; i < kTrainTimesteps; ++i) {
        const float a = alphas_cumprod[i];
        SD_CHECK(a > 0.0f && a < 1.0f, "alphas_cumprod[%d] = %g is outside (0, 1)", i, a);
        sigmas_[i] = std::sqrt((1 - a) / a);  // CompVisDenoiser: ((1 - ac) / ac) ** 0.5
        log_sigmas_[i] = std::log(sigmas_[i]);
        SD_CHECK(i == 0 || sigmas_[i] >= sigmas_[i - 1],
                 "alphas_cumprod must decrease with t (index %d)", i);
    }
}

// k-diffusion DiscreteSchedule.sigma_to_t: fractional index of log(sigma) in log_sigmas.
float DdpmSchedule::sigma_to_t(float sigma) const {
    const float log_sigma = std::log(sigma);
    int count = 0;  // log_sigmas is ascending: the entries not above log(sigma) form a prefix
    for (float ls : log_sigmas_) count += (log_sigma - ls >= 0) ? 1 : 0;
    const int low_idx = std::clamp(count - 1, 0, kTrainTimesteps - 2);
    const int high_idx = low_idx + 1;
    const float low = log_sigmas_[low_idx];
    const float high = log_sigmas_[high_idx];
    float w = (low - log_sigma) / (low - high);
    w = std::clamp(w, 0.0f, 1.0f);
    return (1.0f - w) * static_cast<float>(low_idx) + w * static_cast<float>(high_idx);
}

// k-diffusion DiscreteSchedule.t_to_sigma: exp of the linearly interpolated log sigma. t is
// clamped to [0, 999] (float rounding of a schedule's last t can land just below 0).
float DdpmSchedule::t_to_sigma(float t) const {
    t = std::clamp(t, 0.0f, static_cast<float>(kMaxT));
    const int low_idx = static_cast<int>(std::floor(t));
    const int high_idx = static_cast<int>(std::ceil(t));
    const float w = t - static_cast<float>(low_idx);
    const float log_sigma = (1.0f - w) * log_sigmas_[low_idx] + w * log_sigmas_[high_idx];
    return std::exp(log_sigma);
}

EdmSchedule::EdmSchedule(float sigma_min, float sigma_max)
    : sigma_min_(sigma_min), sigma_max_(sigma_max) {
    SD_CHECK(sigma_min > 0.0f && sigma_max > sigma_min, "EDM sigma range [%g, %g] is invalid",
             sigma_min, sigma_max);
}

// EDMVDenoiser.sigma_to_t
float EdmSchedule::sigma_to_t(float sigma) const {
    return 0.25f * std::log(sigma);
}

// EDMVDenoiser.t_to_sigma
float EdmSchedule::t_to_sigma(float t) const {
    return std::exp(t * 4 / static_cast<float>(kTrainTimesteps));
}

float time_snr_shift(float alpha, float t) {
    if (alpha == 1.0f) return t;
    return alpha * t / (1 + (alpha - 1) * t);
}

float flux_time_shift(float mu, float sigma, float t) {
    return std::exp(mu) / (std::exp(mu) + std::pow((1.0f / t - 1.0f), sigma));
}

float flux2_empirical_mu(int image_seq_len, int steps) {
    const float a1 = 8.73809524e-05f;  // Flux2FlowDenoiser compute_empirical_mu
    const float b1 = 1.89833333f;
    const float a2 = 0.00016927f;
    const float b2 = 0.45666666f;
    const float seq = static_cast<float>(image_seq_len);
    if (image_seq_len > 4300) return a2 * seq + b2;
    const float m_200 = a2 * seq + b2;
    const float m_10 = a1 * seq + b1;
    const float a = (m_200 - m_10) / 190.0f;
    const float b = m_200 - 200.0f * a;
    return a * static_cast<float>(steps) + b;
}

FlowSchedule::FlowSchedule(float shift) : shift_(shift) {
    SD_CHECK(std::isfinite(shift) && shift > 0.0f, "flow shift %g must be positive", shift);
}

// DiscreteFlowDenoiser.sigma_to_t
float FlowSchedule::sigma_to_t(float sigma) const {
    return sigma * 1000.f;
}

// DiscreteFlowDenoiser.t_to_sigma
float FlowSchedule::t_to_sigma(float t) const {
    return time_snr_shift(shift_, (t + 1) / 1000.f);
}

FluxFlowSchedule::FluxFlowSchedule(float shift) : shift_(shift) {
    SD_CHECK(std::isfinite(shift), "flux flow shift %g must be finite", shift);
}

// FluxFlowDenoiser.sigma_to_t
float FluxFlowSchedule::sigma_to_t(float sigma) const {
    return sigma;
}

// FluxFlowDenoiser.t_to_sigma
float FluxFlowSchedule::t_to_sigma(float t) const {
    return flux_time_shift(shift_, 1.0f, (t + 1) / static_cast<float>(kTrainTimesteps));
}

}  // namespace sd
