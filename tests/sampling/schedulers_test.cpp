// Every scheduler against its closed form, computed here in double precision from the
// definitions (k-diffusion get_sigmas_*, ComfyUI / RES4LYF / LTX schedulers, AYS and GITS).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "base/error.h"
#include "sampling/schedule.h"
#include "sampling/schedulers.h"

namespace sd {
namespace {

constexpr double kPi = 3.14159265358979323846;

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

// The schedule's sigma at fractional timestep t (log-sigma interpolation).
double ref_sigma_at(double t) {
    static const std::vector<double> s = ref_ddpm_sigmas();
    const int lo = static_cast<int>(std::floor(t)), hi = static_cast<int>(std::ceil(t));
    const double w = t - lo;
    return std::exp((1 - w) * std::log(s[lo]) + w * std::log(s[hi]));
}

// steps values from f(i), then the final 0.
std::vector<double> build(int steps, const std::function<double(int)>& f) {
    std::vector<double> out;
    for (int i = 0; i < steps; ++i) out.push_back(f(i));
    out.push_back(0.0);
    return out;
}

void expect_sigmas(const std::vector<float>& got, const std::vector<double>& want, double rtol,
                   const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    EXPECT_EQ(got.back(), 0.0f) << what;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], rtol * std::fabs(want[i]) + 1e-7) << what << " index " << i;
    }
}

// Log-linear resampling of a descending table to n values: log sigma linear in the position.
std::vector<double> ref_log_linear(const std::vector<float>& table, int n) {
    std::vector<double> out;
    const int last = static_cast<int>(table.size()) - 1;
    for (int i = 0; i < n; ++i) {
        const double pos = static_cast<double>(i) * last / (n - 1);
        const int j = std::min(static_cast<int>(std::floor(pos)), last - 1);
        const double f = pos - j;
        out.push_back(std::exp((1 - f) * std::log(table[j]) + f * std::log(table[j + 1])));
    }
    return out;
}

const DdpmSchedule& ddpm() {
    static const DdpmSchedule s;
    return s;
}

TEST(Schedulers, DiscreteIsTheScheduleAtEvenlySpacedTimesteps) {
    for (int n : {1, 2, 4, 8, 20, 30}) {
        std::vector<double> want =
            n == 1 ? std::vector<double>{ref_sigma_at(999), 0.0}
                   : build(n, [&](int i) { return ref_sigma_at(999.0 - 999.0 * i / (n - 1)); });
        expect_sigmas(discrete_sigmas(n, ddpm()), want, 5e-5, "discrete");
        expect_sigmas(scheduler_sigmas(DISCRETE_SCHEDULER, n, ddpm()), want, 5e-5,
                      "discrete dispatch");
    }
}

TEST(Schedulers, KarrasFollowsEquation5) {
    const double smin = 0.0291675, smax = 14.6146;
    for (int n : {2, 5, 10, 25}) {
        const double lo = std::pow(smin, 1 / 7.0), hi = std::pow(smax, 1 / 7.0);
        auto want = build(n, [&](int i) { return std::pow(hi + i / (n - 1.0) * (lo - hi), 7.0); });
        expect_sigmas(karras_sigmas(n, smin, smax), want, 2e-5, "karras");
    }
    expect_sigmas(karras_sigmas(1, 0.03f, 14.6f), {14.6, 0.0}, 1e-7, "karras 1 step");
    // From the schedule's own range.
    const std::vector<float> k = scheduler_sigmas(KARRAS_SCHEDULER, 5, ddpm());
    EXPECT_NEAR(k.front(), ddpm().sigma_max(), 2e-5 * ddpm().sigma_max());
    EXPECT_NEAR(k[4], ddpm().sigma_min(), 1e-6);
}

TEST(Schedulers, ExponentialIsLogUniform) {
    const double smin = 0.03, smax = 14.6;
    for (int n : {2, 6, 13}) {
        auto want = build(n, [&](int i) {
            return std::exp(std::log(smax) + (std::log(smin) - std::log(smax)) * i / (n - 1));
        });
        expect_sigmas(exponential_sigmas(n, smin, smax), want, 2e-6, "exponential");
    }
    expect_sigmas(exponential_sigmas(1, 0.03f, 14.6f), {14.6, 0.0}, 1e-7, "exponential 1 step");
}

TEST(Schedulers, AlignYourStepsTablesAndResampling) {
    const std::vector<float> sd15 = {14.6146412293f, 6.4745760956f, 3.8636745985f, 2.6946151520f,
                                     1.8841921177f,  1.3943805092f, 0.9642583904f, 0.6523686016f,
                                     0.3977456272f,  0.1515232662f, 0.0291671582f};
    const std::vector<float> sdxl = {14.6146412293f, 6.3184485287f, 3.7681790315f, 2.1811480769f,
                                     1.3405244945f,  0.8620721141f, 0.5550693289f, 0.3798540708f,
                                     0.2332364134f,  0.1114188177f, 0.0291671582f};
    std::vector<double> want(sd15.begin(), sd15.end());
    want.back() = 0.0;
    expect_sigmas(ays_sigmas(10, AysTable::Sd15), want, 0, "ays sd15 10 steps");
    std::vector<double> want_xl(sdxl.begin(), sdxl.end());
    want_xl.back() = 0.0;
    SchedulerOptions xl;
    xl.ays_table = AysTable::Sdxl;
    expect_sigmas(scheduler_sigmas(AYS_SCHEDULER, 10, ddpm(), xl), want_xl, 0, "ays sdxl 10 steps");
    for (int n : {1, 4, 7, 15, 30}) {
        std::vector<double> r = ref_log_linear(sd15, n + 1);
        r.back() = 0.0;
        expect_sigmas(ays_sigmas(n, AysTable::Sd15), r, 1e-5, "ays resampled");
    }
    EXPECT_EQ(ays_sigmas(10, AysTable::Svd).front(), 700.0f);
    SchedulerOptions none;
    none.ays_table = AysTable::None;
    EXPECT_THROW(scheduler_sigmas(AYS_SCHEDULER, 10, ddpm(), none), Error);
}

TEST(Schedulers, GitsTableRowsAndResampling) {
    // Rows of the coefficient-1.20 table (GITS paper / diff-sampler), spot-checked.
    expect_sigmas(gits_sigmas(2), {14.61464119, 0.803307, 0.0}, 1e-7, "gits 2");
    expect_sigmas(gits_sigmas(5),
                  {14.61464119, 2.84484982, 1.24153244, 0.59516323, 0.25053367, 0.0}, 1e-7,
                  "gits 5");
    const std::vector<float> g20 = gits_sigmas(20);
    ASSERT_EQ(g20.size(), 21u);
    EXPECT_FLOAT_EQ(g20[1], 7.49001646f);
    EXPECT_FLOAT_EQ(g20[19], 0.09824532f);
    std::vector<float> row20(g20.begin(), g20.end());
    row20.back() = 0.02916753f;
    std::vector<double> r = ref_log_linear(row20, 26);
    r.back() = 0.0;
    expect_sigmas(gits_sigmas(25), r, 1e-5, "gits 25");
    EXPECT_THROW(gits_sigmas(1), Error);
    EXPECT_THROW(scheduler_sigmas(GITS_SCHEDULER, 1, ddpm()), Error);
}

TEST(Schedulers, SgmUniformSimpleSmoothstepLcm) {
    for (int n : {1, 3, 8, 17}) {
        expect_sigmas(
            sgm_uniform_sigmas(n, ddpm()),
            build(n,
                  [&](int i) { return ref_sigma_at(999.0 * (1.0 - static_cast<double>(i) / n)); }),
            5e-5, "sgm_uniform");
        expect_sigmas(
            simple_sigmas(n, ddpm()),
            build(n, [&](int i) { return ref_sigma_at(999 - std::floor(i * 1000.0 / n)); }), 5e-5,
            "simple");
        auto smooth = [](double u) { return u * u * (3 - 2 * u); };
        expect_sigmas(smoothstep_sigmas(n, ddpm()),
                      n == 1 ? std::vector<double>{ref_sigma_at(999), 0.0}
                             : build(n,
                                     [&](int i) {
                                         return ref_sigma_at(std::round(
                                             smooth(1.0 - static_cast<double>(i) / n) * 999));
                                     }),
                      5e-5, "smoothstep");
        expect_sigmas(lcm_sigmas(n, ddpm()),
                      build(n, [&](int i) { return ref_sigma_at((50 - (i * 50) / n) * 20 - 1); }),
                      5e-5, "lcm");
    }
    // LCM's 4-step timesteps are the well-known 999, 759, 499, 259.
    expect_sigmas(lcm_sigmas(4, ddpm()),
                  {ref_sigma_at(999), ref_sigma_at(759), ref_sigma_at(499), ref_sigma_at(259), 0.0},
                  5e-5, "lcm 4");
}

TEST(Schedulers, KlOptimalInterpolatesAngles) {
    const double smin = 0.0291675, smax = 14.6146;
    for (int n : {2, 5, 12}) {
        auto want = build(n, [&](int i) {
            const double t = static_cast<double>(i) / (n - 1);
            return std::tan(t * std::atan(smin) + (1 - t) * std::atan(smax));
        });
        expect_sigmas(kl_optimal_sigmas(n, smin, smax), want, 2e-6, "kl_optimal");
    }
    expect_sigmas(kl_optimal_sigmas(1, 0.03f, 14.6f), {14.6, 0.0}, 1e-7, "kl_optimal 1");
}

// RES4LYF bong_tangent_scheduler, transcribed in double.
std::vector<double> ref_bong_tangent(int n, double smin, double smax) {
    auto stage = [](int steps, double slope, double pivot, double start, double end) {
        auto f = [&](double x) { return ((2 / kPi) * std::atan(-slope * (x - pivot)) + 1) / 2; };
        const double hi = f(0), lo = f(steps - 1);
        std::vector<double> out;
        for (int x = 0; x < steps; ++x)
            out.push_back((f(x) - lo) / (hi - lo) * (start - end) + end);
        return out;
    };
    const int steps = n + 2;
    const int midpoint = static_cast<int>((steps * 0.6 + steps * 0.6) / 2);
    const int pivot = static_cast<int>(steps * 0.6);
    const double slope = 0.2 / (steps / 40.0);
    const int len2 = steps - midpoint, len1 = steps - len2;
    const double middle = smin + (smax - smin) / 2;
    std::vector<double> s1 = stage(len1, slope, pivot, smax, middle);
    std::vector<double> s2 = stage(len2, slope, pivot - len1, middle, smin);
    s1.pop_back();
    s1.insert(s1.end(), s2.begin(), s2.end());
    s1.back() = 0.0;  // the reference replaces the final sigma_min by 0
    return s1;
}

TEST(Schedulers, BongTangent) {
    for (int n : {3, 8, 20}) {
        expect_sigmas(bong_tangent_sigmas(n, 0.0291675f, 14.6146f),
                      ref_bong_tangent(n, 0.0291675f, 14.6146f), 2e-5, "bong_tangent");
    }
    const std::vector<float> one = bong_tangent_sigmas(1, 0.03f, 14.6f);
    EXPECT_EQ(one.size(), 2u);
    EXPECT_EQ(one.back(), 0.0f);
}

TEST(Schedulers, Ltx2) {
    for (int n : {2, 8, 30}) {
        const double m = (2.05 - 0.95) / (4096.0 - 1024.0), b = 0.95 - m * 1024.0;
        const double e = std::exp(4096 * m + b);
        std::vector<double> s;
        for (int i = 0; i <= n; ++i) {
            double sigma = 1.0 - static_cast<double>(i) / n;
            if (sigma != 0) sigma = e / (e + (1 / sigma - 1));
            s.push_back(sigma);
        }
        const double scale = (1 - s[n - 1]) / (1 - 0.1);
        for (int i = 0; i < n; ++i) s[i] = 1 - (1 - s[i]) / scale;
        s[n] = 0;
        expect_sigmas(ltx2_sigmas(n, 4096), s, 2e-5, "ltx2");
        EXPECT_NEAR(ltx2_sigmas(n, 4096)[n - 1], 0.1, 1e-5);
    }
}

// Values computed independently in Python (not from these formulas' C++): logit_normal with
// statistics.NormalDist().inv_cdf; beta's timesteps with the Beta(0.6, 0.6) quantile found by
// integrating its density numerically (x = sin^2 theta, 200k trapezoids) and interpolating;
// flux / flux2 from BFL's get_schedule / compute_empirical_mu in double precision.
TEST(Schedulers, LogitNormal) {
    expect_sigmas(logit_normal_sigmas(4, 0.0f, 1.75f),
                  {0.999447221, 0.765011999, 0.5, 0.234988001, 0}, 1e-6, "logit_normal 4");
    expect_sigmas(logit_normal_sigmas(10, 0.0f, 1.75f),
                  {0.999447221, 0.904020312, 0.813488237, 0.714573416, 0.609058748, 0.5,
                   0.390941252, 0.285426584, 0.186511763, 0.0959796883, 0},
                  1e-6, "logit_normal 10");
    expect_sigmas(logit_normal_sigmas(6, 0.5f, 1.5f),
                  {0.999447221, 0.721342846, 0.536457918, 0.377540669, 0.241203811, 0.12442994, 0},
                  1e-6, "logit_normal mu 0.5 std 1.5");
    SchedulerOptions opt;  // the defaults are Ideogram's 20-step values, mu 0 and std 1.75
    EXPECT_EQ(scheduler_sigmas(LOGIT_NORMAL_SCHEDULER, 4, ddpm(), opt),
              logit_normal_sigmas(4, 0.0f, 1.75f));
    EXPECT_THROW(logit_normal_sigmas(4, 0.0f, 0.0f), Error);
    const double p[] = {1e-6, 0.01, 0.3, 0.5, 0.975, 0.999999};
    const double z[] = {-4.753424308823, -2.326347874041, -0.524400512708, 0.0,
                        1.959963984540,  4.753424308817};
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(inverse_normal_cdf(p[i]), z[i], 1e-9) << p[i];
    EXPECT_THROW(inverse_normal_cdf(0.0), Error);
}

TEST(Schedulers, Beta) {
    const double p[] = {0.1, 0.25, 0.5, 0.9};
    const double q[] = {0.0395844127, 0.1756803863, 0.5, 0.9604155874};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(beta_quantile(p[i], 0.6, 0.6), q[i], 2e-8) << p[i];
    const std::vector<std::pair<int, std::vector<int>>> cases = {
        {3, {999, 724, 275}},
        {10, {999, 959, 876, 765, 637, 500, 362, 234, 123, 40}},
        {25, {999, 990, 972, 946, 913, 876, 835, 789, 741, 690, 637, 582, 527,
              472, 417, 362, 309, 258, 210, 164, 123, 86,  53,  27,  9}},
    };
    for (const auto& [n, ts] : cases) {
        std::vector<double> want;
        for (int t : ts) want.push_back(ddpm().t_to_sigma(static_cast<float>(t)));
        want.push_back(0.0);
        expect_sigmas(beta_sigmas(n, ddpm()), want, 1e-6, "beta");
    }
    // Very many steps repeat timesteps; the reference skips the repeats.
    EXPECT_LT(beta_sigmas(2000, ddpm()).size(), 2001u);
}

TEST(Schedulers, FluxAndFlux2) {
    expect_sigmas(flux_sigmas(4, 1024), {1, 0.849234831, 0.652489462, 0.384944749, 0}, 2e-6,
                  "flux 1024 tokens");
    expect_sigmas(flux_sigmas(5, 4096), {1, 0.926647345, 0.825701662, 0.677986715, 0.441199748, 0},
                  2e-6, "flux 4096 tokens");
    expect_sigmas(flux2_sigmas(4, 1024), {1, 0.958085372, 0.883981832, 0.717496559, 0}, 2e-6,
                  "flux2 1024 tokens");
    expect_sigmas(flux2_sigmas(3, 6000), {1, 0.897102229, 0.685494622, 0}, 2e-6,
                  "flux2 6000 tokens");
    SchedulerOptions opt;
    opt.image_tokens = 1024;
    EXPECT_EQ(scheduler_sigmas(FLUX_SCHEDULER, 4, ddpm(), opt), flux_sigmas(4, 1024));
    EXPECT_EQ(scheduler_sigmas(FLUX2_SCHEDULER, 4, ddpm(), opt), flux2_sigmas(4, 1024));
}

TEST(Schedulers, EveryKindEndsAtZeroAndDescends) {
    SchedulerOptions opt;
    for (int k = 0; k < SCHEDULER_COUNT; ++k) {
        for (int n : {2, 3, 10, 40}) {
            const std::vector<float> s =
                scheduler_sigmas(static_cast<Scheduler>(k), n, ddpm(), opt);
            ASSERT_EQ(s.size(), static_cast<size_t>(n) + 1) << k;  // beta: fewer only past ~500
            EXPECT_EQ(s.back(), 0.0f) << k;
            for (int i = 0; i < n; ++i)
                EXPECT_GE(s[i], s[i + 1]) << "scheduler " << k << " steps " << n << " at " << i;
        }
    }
}

TEST(Schedulers, BadInput) {
    EXPECT_THROW(scheduler_sigmas(KARRAS_SCHEDULER, 0, ddpm()), Error);
    EXPECT_THROW(scheduler_sigmas(DISCRETE_SCHEDULER, -3, ddpm()), Error);
    EXPECT_THROW(scheduler_sigmas(SCHEDULER_COUNT, 4, ddpm()), Error);
    EXPECT_THROW(scheduler_sigmas(static_cast<Scheduler>(-1), 4, ddpm()), Error);
    EXPECT_THROW(scheduler_sigmas(SIMPLE_SCHEDULER, 1 << 30, ddpm()), Error);
    EXPECT_THROW(karras_sigmas(0, 0.1f, 10.0f), Error);
}

TEST(Schedulers, FlowModels) {
    // Flux dev (shift 1.15), simple scheduler, 3 steps: sigma(t) at t = 999, 666, 333.
    const FluxFlowSchedule flux(1.15f);
    auto sig = [](double t) {
        return std::exp(1.15) / (std::exp(1.15) + (1.0 / ((t + 1) / 1000.0) - 1.0));
    };
    expect_sigmas(scheduler_sigmas(SIMPLE_SCHEDULER, 3, flux), {sig(999), sig(666), sig(333), 0.0},
                  1e-6, "flux simple");
    expect_sigmas(scheduler_sigmas(DISCRETE_SCHEDULER, 4, flux),
                  {sig(999), sig(666), sig(333), sig(0), 0.0}, 1e-6, "flux discrete");
    // sgm_uniform: n + 1 timesteps evenly from 999 to 0, the last dropped.
    expect_sigmas(scheduler_sigmas(SGM_UNIFORM_SCHEDULER, 4, flux),
                  {sig(999), sig(749.25), sig(499.5), sig(249.75), 0.0}, 1e-6, "flux sgm_uniform");
    // The flux scheduler ignores the model's shift: its mu is 0.5 + 0.65 (tokens - 256) / 3840 for
    // the latent's pixel count (1280 at 320x256), at t = 1, 2/3, 1/3.
    SchedulerOptions rect;
    rect.image_tokens = 1280;
    const double mu = 0.5 + 0.65 * (1280 - 256) / 3840.0;
    auto shifted = [&](double t) { return std::exp(mu) / (std::exp(mu) + 1 / t - 1); };
    expect_sigmas(scheduler_sigmas(FLUX_SCHEDULER, 3, flux, rect),
                  {1.0, shifted(2 / 3.0), shifted(1 / 3.0), 0.0}, 1e-6, "flux 1280 tokens");
    // SD3 (FlowSchedule, shift 3): sigma = 3u / (1 + 2u) at u = (t + 1) / 1000.
    const FlowSchedule sd3(3.0f);
    auto sd3_sig = [](double t) {
        const double u = (t + 1) / 1000.0;
        return 3 * u / (1 + 2 * u);
    };
    expect_sigmas(scheduler_sigmas(SIMPLE_SCHEDULER, 4, sd3),
                  {sd3_sig(999), sd3_sig(749), sd3_sig(499), sd3_sig(249), 0.0}, 1e-6,
                  "sd3 simple");
    expect_sigmas(scheduler_sigmas(SGM_UNIFORM_SCHEDULER, 2, sd3),
                  {sd3_sig(999), sd3_sig(499.5), 0.0}, 1e-6, "sd3 sgm_uniform");
}

}  // namespace
}  // namespace sd
