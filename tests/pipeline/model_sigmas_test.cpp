// The sigmas a model samples with: FLUX.2's flow shift follows the request (its empirical mu
// of the image tokens and steps, hand-computed here in double), for the flux2 schedule and for
// a schedule over the denoiser's timesteps (discrete); other models read their denoiser's own.
#include "pipeline/model_sigmas.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sd {
namespace {

// compute_empirical_mu for `tokens` <= 4300 in double.
double empirical_mu(double tokens, double steps) {
    const double m200 = 0.00016927 * tokens + 0.45666666;
    const double m10 = 8.73809524e-05 * tokens + 1.89833333;
    const double a = (m200 - m10) / 190.0;
    return a * steps + (m200 - 200.0 * a);
}

double shifted(double mu, double t) {
    return std::exp(mu) / (std::exp(mu) + (1.0 / t - 1.0));
}

ModelComponents flux2_like(bool shift_from_tokens) {
    ModelComponents m;
    m.latent.channels = 128;
    m.latent.factor = 16;
    m.shift_from_tokens = shift_from_tokens;
    return m;
}

TEST(ModelSigmas, Flux2DiscreteScheduleIsShiftedByTheEmpiricalMu) {
    const auto d = make_denoiser(FLUX_FLOW_PRED, 1.0f);
    // 256x256 at factor 16: 256 tokens; 3 steps over t = 999, 499.5, 0.
    const double mu = empirical_mu(256, 3);
    const std::vector<float> got =
        model_sigmas(flux2_like(true), *d, DISCRETE_SCHEDULER, 3, 256, 256);
    ASSERT_EQ(got.size(), 4u);
    const double t[3] = {1000.0 / 1000, 500.5 / 1000, 1.0 / 1000};
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], shifted(mu, t[i]), 2e-6) << i;
    EXPECT_EQ(got[3], 0.0f);
    // The denoiser's own shift (mu 1) gives other sigmas: the request's shift was used.
    const std::vector<float> plain =
        model_sigmas(flux2_like(false), *d, DISCRETE_SCHEDULER, 3, 256, 256);
    EXPECT_NEAR(plain[1], shifted(1.0, t[1]), 2e-6);
    EXPECT_GT(std::fabs(plain[1] - got[1]), 1e-3);
    // A flow shift the request sets wins: the run's denoiser carries it.
    const auto own = make_denoiser(FLUX_FLOW_PRED, 2.0f);
    const std::vector<float> set =
        model_sigmas(flux2_like(true), *own, DISCRETE_SCHEDULER, 3, 256, 256, true);
    EXPECT_NEAR(set[1], shifted(2.0, t[1]), 2e-6);
}

TEST(ModelSigmas, Flux2ScheduleTakesTheImageTokens) {
    const auto d = make_denoiser(FLUX_FLOW_PRED, 1.0f);
    // 512x256: 32 x 16 = 512 tokens; BFL's flux2 schedule: t = 1, 0.75, ... 0 shifted by mu.
    const double mu = empirical_mu(512, 4);
    const std::vector<float> got = model_sigmas(flux2_like(true), *d, FLUX2_SCHEDULER, 4, 512, 256);
    ASSERT_EQ(got.size(), 5u);
    for (int i = 1; i < 4; ++i) EXPECT_NEAR(got[i], shifted(mu, 1.0 - 0.25 * i), 2e-6) << i;
    EXPECT_NEAR(got[0], 1.0, 1e-6);
    EXPECT_EQ(got[4], 0.0f);
}

}  // namespace
}  // namespace sd
