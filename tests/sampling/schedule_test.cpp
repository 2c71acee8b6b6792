// Noise schedules against their closed forms computed here in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "sampling/schedule.h"

namespace sd {
namespace {

// ldm make_beta_schedule("linear") + CompVisDenoiser, in double.
std::vector<double> ref_ddpm_sigmas() {
    std::vector<double> sigmas(1000);
    const double a = std::sqrt(0.00085), b = std::sqrt(0.012);
    double prod = 1.0;
    for (int i = 0; i < 1000; ++i) {
        const double sb = a + (b - a) * i / 999.0;
        prod *= 1.0 - sb * sb;
        sigmas[i] = std::sqrt((1.0 - prod) / prod);
    }
    return sigmas;
}

// k-diffusion t_to_sigma in double: interpolate log sigma at fractional t.
double ref_t_to_sigma(const std::vector<double>& sigmas, double t) {
    const int lo = static_cast<int>(std::floor(t)), hi = static_cast<int>(std::ceil(t));
    const double w = t - lo;
    return std::exp((1 - w) * std::log(sigmas[lo]) + w * std::log(sigmas[hi]));
}

TEST(DdpmSchedule, SigmasMatchTheScaledLinearSchedule) {
    const DdpmSchedule s;
    const std::vector<double> ref = ref_ddpm_sigmas();
    ASSERT_EQ(s.sigmas().size(), 1000u);
    for (int i = 0; i < 1000; ++i) EXPECT_NEAR(s.sigmas()[i], ref[i], 2e-5 * ref[i]) << i;
    // k-diffusion's well-known range for SD: 0.0292 .. 14.6146.
    EXPECT_NEAR(s.sigma_min(), 0.0291675, 2e-6);
    EXPECT_NEAR(s.sigma_max(), 14.6146, 2e-4);
    const std::vector<float> ac = ddpm_alphas_cumprod();
    const std::vector<double> ac64 = ddpm_alphas_cumprod_f64();
    EXPECT_NEAR(ac[0], 1.0 - 0.00085, 1e-7);
    EXPECT_NEAR(ac64[999], 1.0 / (1.0 + ref[999] * ref[999]), 1e-9);
}

TEST(DdpmSchedule, TimestepConversionsInterpolateLogSigma) {
    const DdpmSchedule s;
    const std::vector<double> ref = ref_ddpm_sigmas();
    for (double t : {0.0, 1.0, 10.25, 333.0, 500.5, 998.9, 999.0}) {
        EXPECT_NEAR(s.t_to_sigma(static_cast<float>(t)), ref_t_to_sigma(ref, t),
                    3e-5 * ref_t_to_sigma(ref, t))
            << t;
    }
    // sigma_to_t inverts t_to_sigma (to float precision of the log interpolation).
    for (float t : {0.0f, 3.5f, 250.0f, 640.75f, 998.0f, 999.0f}) {
        EXPECT_NEAR(s.sigma_to_t(s.t_to_sigma(t)), t, 2e-3f) << t;
    }
    // Out-of-range noise levels clamp to the table's ends.
    EXPECT_EQ(s.sigma_to_t(1e-4f), 0.0f);
    EXPECT_EQ(s.sigma_to_t(0.0f), 0.0f);
    EXPECT_EQ(s.sigma_to_t(100.0f), 999.0f);
    EXPECT_FLOAT_EQ(s.t_to_sigma(-1e-4f), s.sigmas()[0]);  // rounding below 0 never reads outside
}

TEST(DdpmSchedule, CheckpointAlphasAndBadInput) {
    std::vector<float> ac = ddpm_alphas_cumprod();
    const DdpmSchedule own(ac);
    EXPECT_EQ(own.sigma_max(), DdpmSchedule().sigma_max());
    EXPECT_THROW(DdpmSchedule(std::vector<float>(10, 0.5f)), Error);
    ac[3] = 1.5f;
    EXPECT_THROW(DdpmSchedule{ac}, Error);
    ac[3] = std::nanf("");
    EXPECT_THROW(DdpmSchedule{ac}, Error);
}

TEST(EdmSchedule, ClosedForms) {
    const EdmSchedule s;
    EXPECT_FLOAT_EQ(s.sigma_min(), 0.002f);
    EXPECT_FLOAT_EQ(s.sigma_max(), 120.0f);
    EXPECT_NEAR(s.t_to_sigma(500.0f), std::exp(2.0), 1e-5);
    EXPECT_NEAR(s.sigma_to_t(std::exp(1.0f)), 0.25, 1e-6);
    EXPECT_THROW(EdmSchedule(1.0f, 0.5f), Error);
}

TEST(FlowSchedule, ShiftedTimesteps) {
    const FlowSchedule s(3.0f);
    auto shifted = [](double t) { return 3.0 * t / (1.0 + 2.0 * t); };
    EXPECT_NEAR(s.sigma_max(), 1.0, 1e-7);
    EXPECT_NEAR(s.sigma_min(), shifted(0.001), 1e-8);
    EXPECT_NEAR(s.t_to_sigma(499.0f), shifted(0.5), 1e-7);
    EXPECT_FLOAT_EQ(s.sigma_to_t(0.25f), 250.0f);
    EXPECT_EQ(FlowSchedule(1.0f).t_to_sigma(99.0f), 0.1f);
    EXPECT_THROW(FlowSchedule(0.0f), Error);
    EXPECT_THROW(FlowSchedule(std::nanf("")), Error);
}

TEST(FluxFlowSchedule, ShiftedTimesteps) {
    const float mu = 1.15f;
    const FluxFlowSchedule s(mu);
    auto shifted = [&](double t) { return std::exp(mu) / (std::exp(mu) + (1.0 / t - 1.0)); };
    EXPECT_NEAR(s.t_to_sigma(249.0f), shifted(0.25), 1e-6);
    EXPECT_NEAR(s.sigma_max(), 1.0, 1e-7);
    EXPECT_NEAR(s.sigma_min(), shifted(0.001), 1e-7);
    EXPECT_EQ(s.sigma_to_t(0.7f), 0.7f);
    EXPECT_NEAR(time_snr_shift(3.0f, 0.5f), 0.75, 1e-7);
    EXPECT_EQ(time_snr_shift(1.0f, 0.3f), 0.3f);
    EXPECT_NEAR(flux_time_shift(0.0f, 1.0f, 0.25f), 0.25, 1e-7);
}

TEST(FluxFlowSchedule, Flux2EmpiricalMu) {
    // Linear in steps between the fits at 10 and 200 steps; one fit above 4300 tokens.
    const int seq = 1024;
    const double m200 = 0.00016927 * seq + 0.45666666, m10 = 8.73809524e-05 * seq + 1.89833333;
    EXPECT_NEAR(flux2_empirical_mu(seq, 200), m200, 1e-5);
    EXPECT_NEAR(flux2_empirical_mu(seq, 10), m10, 1e-5);
    EXPECT_NEAR(flux2_empirical_mu(5000, 4), 0.00016927 * 5000 + 0.45666666, 1e-5);
}

}  // namespace
}  // namespace sd
