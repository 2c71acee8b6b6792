// Schedulers: the noise levels a sampler steps through. Each returns steps + 1 sigmas (beta:
// at most), from
// the highest down, ending with 0, as stable-diffusion.cpp's denoiser computes them (its
// SigmaScheduler classes, float arithmetic kept).
#pragma once

#include <vector>

#include "sampling/schedule.h"
#include "stable-diffusion.h"

namespace sd {

using Scheduler = scheduler_t;

// Which Align-Your-Steps table a model uses (AYSScheduler). The reference uses the SD 1.5
// table for SD 1.x; for SD 2.x it only warns and has no table, so SD 2.x should pass Sd15 here.
enum class AysTable { None, Sd15, Sdxl, Svd };

struct SchedulerOptions {
    AysTable ays_table = AysTable::Sd15;
    int image_tokens = 4096;  // ltx2, flux, flux2: latent token count
    // logit_normal (extra sample args mu, std; Ideogram's 20-step values by default).
    float logit_normal_mu = 0.0f;
    float logit_normal_std = 1.75f;
};

// The sigmas of `scheduler` for `steps` steps on `schedule`. Throws sd::Error for steps <= 0,
// an unknown scheduler, gits with fewer than 2 steps or ays without a table.
std::vector<float> scheduler_sigmas(Scheduler scheduler, int steps, const NoiseSchedule& schedule,
                                    const SchedulerOptions& options = {});

// The individual schedulers (steps >= 1 unless noted).
std::vector<float> discrete_sigmas(int steps, const NoiseSchedule& schedule);
std::vector<float> karras_sigmas(int steps, float sigma_min, float sigma_max, float rho = 7.0f);
std::vector<float> exponential_sigmas(int steps, float sigma_min, float sigma_max);
std::vector<float> ays_sigmas(int steps, AysTable table);
std::vector<float> gits_sigmas(int steps);  // steps >= 2
std::vector<float> sgm_uniform_sigmas(int steps, const NoiseSchedule& schedule);
std::vector<float> simple_sigmas(int steps, const NoiseSchedule& schedule);
std::vector<float> smoothstep_sigmas(int steps, const NoiseSchedule& schedule);
std::vector<float> kl_optimal_sigmas(int steps, float sigma_min, float sigma_max);
std::vector<float> lcm_sigmas(int steps, const NoiseSchedule& schedule);
std::vector<float> bong_tangent_sigmas(int steps, float sigma_min, float sigma_max);
std::vector<float> ltx2_sigmas(int steps, int image_tokens);
std::vector<float> logit_normal_sigmas(int steps, float mu, float std_dev);
std::vector<float> flux2_sigmas(int steps, int image_tokens);
std::vector<float> flux_sigmas(int steps, int image_tokens);
// May return fewer than steps + 1 sigmas: repeated timesteps are skipped, as in the reference.
std::vector<float> beta_sigmas(int steps, const NoiseSchedule& schedule);

// Pieces of the schedulers above: the Beta(a, b) quantile (bisection on the regularized
// incomplete beta function) and the standard normal quantile (0 < p < 1, else sd::Error).
double beta_quantile(double p, double a, double b);
double inverse_normal_cdf(double p);

// Log-linear resampling of a descending sigma table to new_len values
// (log_linear_interpolation of the reference, used by ays and gits).
std::vector<float> log_linear_interpolation(const std::vector<float>& sigmas, size_t new_len);

}  // namespace sd
