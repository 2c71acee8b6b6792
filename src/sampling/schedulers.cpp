// Schedulers (stable-diffusion.cpp denoiser: the SigmaScheduler classes).
#include "sampling/schedulers.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace sd {

namespace {

constexpr float kMaxT = kTrainTimesteps - 1;
constexpr float kPi = 3.14159265358979323846f;

// Align Your Steps noise levels for 10 steps (AYSScheduler; NVIDIA's published tables).
const std::vector<float> kAysSd15 = {14.6146412293f, 6.4745760956f, 3.8636745985f, 2.6946151520f,
                                     1.8841921177f,  1.3943805092f, 0.9642583904f, 0.6523686016f,
                                     0.3977456272f,  0.1515232662f, 0.0291671582f};
const std::vector<float> kAysSdxl = {14.6146412293f, 6.3184485287f, 3.7681790315f, 2.1811480769f,
                                     1.3405244945f,  0.8620721141f, 0.5550693289f, 0.3798540708f,
                                     0.2332364134f,  0.1114188177f, 0.0291671582f};
const std::vector<float> kAysSvd = {700.00f, 54.5f,  15.886f, 7.977f, 4.248f, 1.789f,
                                    0.981f,  0.403f, 0.173f,  0.034f, 0.002f};

// GITS noise levels for coefficient 1.20, rows for 2..20 steps (GITSScheduler, the table of
// zju-pi/diff-sampler gits-main; the reference always uses coefficient 1.20).
const std::vector<std::vector<float>> kGits120 = {
    {14.61464119f, 0.803307f, 0.02916753f},
    {14.61464119f, 1.56271636f, 0.52423614f, 0.02916753f},
    {14.61464119f, 2.36326075f, 0.92192322f, 0.36617002f, 0.02916753f},
    {14.61464119f, 2.84484982f, 1.24153244f, 0.59516323f, 0.25053367f, 0.02916753f},
    {14.61464119f, 5.85520077f, 2.05039096f, 0.95350921f, 0.45573691f, 0.17026083f, 0.02916753f},
    {14.61464119f, 5.85520077f, 2.45070267f, 1.24153244f, 0.64427125f, 0.29807833f, 0.09824532f,
     0.02916753f},
    {14.61464119f, 5.85520077f, 2.45070267f, 1.36964464f, 0.803307f, 0.45573691f, 0.25053367f,
     0.09824532f, 0.02916753f},
    {14.61464119f, 5.85520077f, 2.84484982f, 1.61558151f, 0.95350921f, 0.59516323f, 0.36617002f,
     0.19894916f, 0.09824532f, 0.02916753f},
    {14.61464119f, 5.85520077f, 2.84484982f, 1.67050016f, 1.08895338f, 0.74807048f, 0.50118381f,
     0.32104823f, 0.19894916f, 0.09824532f, 0.02916753f},
    {14.61464119f, 5.85520077f, 2.95596409f, 1.84880662f, 1.24153244f, 0.83188516f, 0.59516323f,
     0.41087446f, 0.27464288f, 0.17026083f, 0.09824532f, 0.02916753f},
    {14.61464119f, 5.85520077f, 3.07277966f, 1.98035145f, 1.36964464f, 0.95350921f, 0.69515091f,
     0.50118381f, 0.36617002f, 0.25053367f, 0.17026083f, 0.09824532f, 0.02916753f},
    {14.61464119f, 6.77309084f, 3.46139455f, 2.36326075f, 1.56271636f, 1.08895338f, 0.803307f,
     0.59516323f, 0.45573691f, 0.34370604f, 0.25053367f, 0.17026083f, 0.09824532f, 0.02916753f},
    {14.61464119f, 6.77309084f, 3.46139455f, 2.45070267f, 1.61558151f, 1.162866f, 0.86115354f,
     0.64427125f, 0.50118381f, 0.38853383f, 0.29807833f, 0.22545385f, 0.17026083f, 0.09824532f,
     0.02916753f},
    {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.12350607f, 1.51179266f, 1.08895338f,
     0.83188516f, 0.64427125f, 0.50118381f, 0.38853383f, 0.29807833f, 0.22545385f, 0.17026083f,
     0.09824532f, 0.02916753f},
    {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.12350607f, 1.51179266f, 1.08895338f,
     0.83188516f, 0.64427125f, 0.50118381f, 0.41087446f, 0.32104823f, 0.25053367f, 0.19894916f,
     0.13792117f, 0.09824532f, 0.02916753f},
    {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.12350607f, 1.51179266f, 1.08895338f,
     0.83188516f, 0.64427125f, 0.50118381f, 0.41087446f, 0.34370604f, 0.27464288f, 0.22545385f,
     0.17026083f, 0.13792117f, 0.09824532f, 0.02916753f},
    {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.19988537f, 1.61558151f, 1.20157266f,
     0.92192322f, 0.72133851f, 0.57119018f, 0.45573691f, 0.36617002f, 0.29807833f, 0.25053367f,
     0.19894916f, 0.17026083f, 0.13792117f, 0.09824532f, 0.02916753f},
    {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.19988537f, 1.61558151f, 1.24153244f,
     0.95350921f,  0.74807048f, 0.59516323f, 0.4783645f,  0.38853383f, 0.32104823f, 0.27464288f,
     0.22545385f,  0.19894916f, 0.17026083f, 0.13792117f, 0.09824532f, 0.02916753f},
    {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.19988537f, 1.61558151f, 1.24153244f,
     0.95350921f,  0.74807048f, 0.59516323f, 0.50118381f, 0.41087446f, 0.34370604f, 0.29807833f,
     0.25053367f,  0.22545385f, 0.19894916f, 0.17026083f, 0.13792117f, 0.09824532f, 0.02916753f},
};

// exp(mu) / (exp(mu) + 1 / t - 1) at t = 1 - i / steps, i = 0..steps (BFL time_shift, sigma 1).
std::vector<float> flux_time_shifted(int steps, float mu) {
    std::vector<float> out;
    for (int i = 0; i <= steps; ++i) {
        const float t = 1.0f - static_cast<float>(i) / static_cast<float>(steps);
        out.push_back(t > 0.0f ? flux_time_shift(mu, 1.0f, t) : 0.0f);
    }
    out[steps] = 0.0f;
    return out;
}

// Continued fraction of the regularized incomplete beta function (modified Lentz).
double beta_fraction(double a, double b, double x) {
    const double tiny = 1e-300;
    const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    d = 1.0 / (std::fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 300; ++m) {
        const double m2 = 2.0 * m;
        for (int half = 0; half < 2; ++half) {
            const double aa = half == 0 ? m * (b - m) * x / ((qam + m2) * (a + m2))
                                        : -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
            d = 1.0 + aa * d;
            d = 1.0 / (std::fabs(d) < tiny ? tiny : d);
            c = 1.0 + aa / c;
            if (std::fabs(c) < tiny) c = tiny;
            h *= d * c;
            if (half == 1 && std::fabs(d * c - 1.0) < 1e-15) return h;
        }
    }
    return h;
}

// I_x(a, b), the Beta(a, b) distribution function.
double incomplete_beta(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                  a * std::log(x) + b * std::log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
    return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

// n points from start to end by repeated addition in float (linear_space of the reference).
std::vector<float> linear_space(float start, float end, size_t n) {
    std::vector<float> out(n);
    if (n == 0) return out;
    const float inc = (end - start) / static_cast<float>(n - 1);
    out[0] = start;
    for (size_t i = 1; i < n; ++i) out[i] = out[i - 1] + inc;
    return out;
}

// Piecewise-linear interpolation in double of ascending (ref_x, ref_y) at new_x, the ends of
// new_x clamped into ref_x's range (linear_interp, after NumCpp's interp).
std::vector<double> linear_interp(std::vector<float> new_x, const std::vector<float>& ref_x,
                                  const std::vector<float>& ref_y) {
    std::vector<double> new_y(new_x.size());
    if (new_x.empty() || ref_x.size() < 2) return new_y;
    new_x.front() = std::max(new_x.front(), ref_x.front());
    new_x.back() = std::min(new_x.back(), ref_x.back());
    size_t j = 0;
    for (size_t i = 0; i < new_x.size();) {
        const bool outside = ref_x[j] > new_x[i] || new_x[i] > ref_x[j + 1];
        if (outside && j + 2 < ref_x.size()) {
            ++j;
            continue;
        }
        const double perc =
            static_cast<double>(new_x[i] - ref_x[j]) / static_cast<double>(ref_x[j + 1] - ref_x[j]);
        new_y[i] =
            static_cast<double>(ref_y[j]) * (1. - perc) + static_cast<double>(ref_y[j + 1]) * perc;
        ++i;
    }
    return new_y;
}

// Smoothstep polynomial 3x^2 - 2x^3 (SmoothStepScheduler).
float smoothstep(float x) {
    return x * x * (3.0f - 2.0f * x);
}

// One bong_tangent stage: an arctangent ramp from start to end (get_bong_tangent_sigmas).
std::vector<float> bong_tangent_stage(int steps, float slope, float pivot, float start, float end) {
    std::vector<float> out;
    if (steps <= 0) return out;
    auto ramp = [&](float x) {
        return ((2.0f / kPi) * std::atan(-slope * (x - pivot)) + 1.0f) * 0.5f;
    };
    const float smax = ramp(0.0f);
    const float smin = ramp(static_cast<float>(steps - 1));
    const float srange = smax - smin;
    const float sscale = start - end;
    if (std::fabs(srange) < 1e-8f) {
        if (steps == 1) return {start};
        for (int i = 0; i < steps; ++i) {
            const float t = static_cast<float>(i) / static_cast<float>(steps - 1);
            out.push_back(start + (end - start) * t);
        }
        return out;
    }
    const float inv_srange = 1.0f / srange;
    for (int x = 0; x < steps; ++x) {
        out.push_back(((ramp(static_cast<float>(x)) - smin) * inv_srange) * sscale + end);
    }
    return out;
}

constexpr int kMaxSteps = 100000;  // far beyond any use; bounds the allocations

void check_steps(int steps, int min_steps = 1) {
    SD_CHECK(steps >= min_steps, "the number of sampling steps must be at least %d, got %d",
             min_steps, steps);
    SD_CHECK(steps <= kMaxSteps, "%d sampling steps is more than the %d supported", steps,
             kMaxSteps);
}

const std::vector<float>& ays_levels(AysTable table) {
    switch (table) {
        case AysTable::Sd15:
            return kAysSd15;
        case AysTable::Sdxl:
            return kAysSdxl;
        case AysTable::Svd:
            return kAysSvd;
        default:
            fail("the ays scheduler has no noise levels for this model");
    }
}

}  // namespace

double beta_quantile(double p, double a, double b) {
    if (p <= 0.0) return 0.0;
    if (p >= 1.0) return 1.0;
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 80; ++i) {  // bisection to double precision
        const double mid = 0.5 * (lo + hi);
        (incomplete_beta(a, b, mid) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

double inverse_normal_cdf(double p) {
    SD_CHECK(p > 0.0 && p < 1.0, "inverse normal CDF of %g: needs 0 < p < 1", p);
    // Acklam's rational approximation (relative error 1.15e-9) ...
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    const double low = 0.02425;
    double x;
    if (p < low || p > 1.0 - low) {
        const double q = std::sqrt(-2.0 * std::log(p < low ? p : 1.0 - p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
        if (p > 1.0 - low) x = -x;
    } else {
        const double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    }
    // ... refined by one Halley step on the exact CDF 0.5 erfc(-x / sqrt 2).
    const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
    const double u = e * std::sqrt(2.0 * 3.14159265358979323846) * std::exp(x * x / 2.0);
    return x - u / (1.0 + x * u / 2.0);
}

std::vector<float> log_linear_interpolation(const std::vector<float>& sigmas, size_t new_len) {
    const size_t len = sigmas.size();
    std::vector<float> x_vals = linear_space(0.f, 1.f, len);
    std::vector<float> y_vals(len);
    for (size_t i = 0; i < len; ++i) y_vals[i] = std::log(sigmas[len - i - 1]);  // ascending
    std::vector<double> new_y = linear_interp(linear_space(0.f, 1.f, new_len), x_vals, y_vals);
    std::vector<float> out(new_len);
    for (size_t i = 0; i < new_len; ++i)
        out[i] = static_cast<float>(std::exp(new_y[new_len - i - 1]));
    return out;
}

// DiscreteScheduler: t evenly spaced from 999 down to 0.
std::vector<float> discrete_sigmas(int steps, const NoiseSchedule& schedule) {
    check_steps(steps);
    if (steps == 1) return {schedule.t_to_sigma(kMaxT), 0.0f};
    std::vector<float> out;
    const float step = kMaxT / static_cast<float>(steps - 1);
    for (int i = 0; i < steps; ++i)
        out.push_back(schedule.t_to_sigma(kMaxT - step * static_cast<float>(i)));
    out.push_back(0.0f);
    return out;
}

// KarrasScheduler: Karras et al. 2022 eq. (5), k-diffusion get_sigmas_karras. One step gives
// {sigma_max, 0} (the reference divides by zero there).
std::vector<float> karras_sigmas(int steps, float sigma_min, float sigma_max, float rho) {
    check_steps(steps);
    if (steps == 1) return {sigma_max, 0.0f};
    sigma_min = std::max(sigma_min, 1e-6f);
    const float min_inv_rho = std::pow(sigma_min, 1.f / rho);
    const float max_inv_rho = std::pow(sigma_max, 1.f / rho);
    std::vector<float> out(steps + 1);
    for (int i = 0; i < steps; ++i) {
        const float frac = static_cast<float>(i) / (static_cast<float>(steps) - 1.f);
        out[i] = std::pow(max_inv_rho + frac * (min_inv_rho - max_inv_rho), rho);
    }
    out[steps] = 0.0f;
    return out;
}

// ExponentialScheduler: log-uniform, k-diffusion get_sigmas_exponential. One step gives
// {sigma_max, 0}.
std::vector<float> exponential_sigmas(int steps, float sigma_min, float sigma_max) {
    check_steps(steps);
    if (steps == 1) return {sigma_max, 0.0f};
    const float log_min = std::log(sigma_min);
    const float log_max = std::log(sigma_max);
    const float step = (log_max - log_min) / static_cast<float>(steps - 1);
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) out.push_back(std::exp(log_max - step * static_cast<float>(i)));
    out.push_back(0.0f);
    return out;
}

// AYSScheduler: the 10-step table, log-linearly resampled for other step counts.
std::vector<float> ays_sigmas(int steps, AysTable table) {
    check_steps(steps);
    const std::vector<float>& levels = ays_levels(table);
    const size_t n = static_cast<size_t>(steps) + 1;
    std::vector<float> out = (n == levels.size()) ? levels : log_linear_interpolation(levels, n);
    out[steps] = 0.0f;
    return out;
}

// GITSScheduler: the table row for 2..20 steps, the 20-step row resampled beyond.
std::vector<float> gits_sigmas(int steps) {
    check_steps(steps, 2);
    std::vector<float> out =
        steps <= 20 ? kGits120[steps - 2] : log_linear_interpolation(kGits120.back(), steps + 1);
    out[steps] = 0.0f;
    return out;
}

// SGMUniformScheduler: steps + 1 timesteps from 999 to 0, the last replaced by sigma 0.
std::vector<float> sgm_uniform_sigmas(int steps, const NoiseSchedule& schedule) {
    check_steps(steps);
    const std::vector<float> ts = linear_space(kMaxT, 0.0f, static_cast<size_t>(steps) + 1);
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) out.push_back(schedule.t_to_sigma(ts[i]));
    out.push_back(0.0f);
    return out;
}

// SimpleScheduler: every (1000 / steps)-th training timestep from the top (ComfyUI simple).
std::vector<float> simple_sigmas(int steps, const NoiseSchedule& schedule) {
    check_steps(steps);
    const float step_factor = static_cast<float>(kTrainTimesteps) / static_cast<float>(steps);
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
        const int offset = static_cast<int>(static_cast<float>(i) * step_factor);
        const int t = std::max(kTrainTimesteps - 1 - offset, 0);
        out.push_back(schedule.t_to_sigma(static_cast<float>(t)));
    }
    out.push_back(0.0f);
    return out;
}

// SmoothStepScheduler: t = round(smoothstep(1 - i / steps) * 999).
std::vector<float> smoothstep_sigmas(int steps, const NoiseSchedule& schedule) {
    check_steps(steps);
    if (steps == 1) return {schedule.t_to_sigma(kMaxT), 0.0f};
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
        const float u = 1.f - static_cast<float>(i) / static_cast<float>(steps);
        out.push_back(schedule.t_to_sigma(std::round(smoothstep(u) * kMaxT)));
    }
    out.push_back(0.0f);
    return out;
}

// KLOptimalScheduler: sigma = tan of angles evenly spaced from atan(sigma_max) to atan(sigma_min).
std::vector<float> kl_optimal_sigmas(int steps, float sigma_min, float sigma_max) {
    check_steps(steps);
    if (steps == 1) return {sigma_max, 0.0f};
    sigma_min = std::max(sigma_min, 1e-6f);
    const float alpha_min = std::atan(sigma_min);
    const float alpha_max = std::atan(sigma_max);
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
        const float t = static_cast<float>(i) / static_cast<float>(steps - 1);
        out.push_back(std::tan(t * alpha_min + (1.0f - t) * alpha_max));
    }
    out.push_back(0.0f);
    return out;
}

// LCMScheduler: the LCM training timesteps of a 50-step skipping schedule.
std::vector<float> lcm_sigmas(int steps, const NoiseSchedule& schedule) {
    check_steps(steps);
    constexpr int kOriginalSteps = 50;
    constexpr int k = kTrainTimesteps / kOriginalSteps;
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
        const int index = static_cast<int>((static_cast<int64_t>(i) * kOriginalSteps) / steps);
        const int t = (kOriginalSteps - index) * k - 1;
        out.push_back(schedule.t_to_sigma(static_cast<float>(t)));
    }
    out.push_back(0.0f);
    return out;
}

// BongTangentScheduler: two arctangent ramps, sigma_max -> middle -> sigma_min (RES4LYF).
std::vector<float> bong_tangent_sigmas(int steps, float sigma_min, float sigma_max) {
    check_steps(steps);
    const float start = sigma_max;
    const float end = sigma_min;
    const float middle = sigma_min + (sigma_max - sigma_min) * 0.5f;
    const float pivot = 0.6f;
    const int total = steps + 2;
    const int midpoint = static_cast<int>((static_cast<float>(total) * pivot * 2) * 0.5f);
    const int pivot_i = static_cast<int>(static_cast<float>(total) * pivot);
    const float slope = 0.2f / (static_cast<float>(total) / 40.0f);
    const int stage_2_len = total - midpoint;
    const int stage_1_len = total - stage_2_len;

    std::vector<float> s1 =
        bong_tangent_stage(stage_1_len, slope, static_cast<float>(pivot_i), start, middle);
    std::vector<float> s2 = bong_tangent_stage(
        stage_2_len, slope, static_cast<float>(pivot_i - stage_1_len), middle, end);
    if (!s1.empty()) s1.pop_back();
    std::vector<float> out = s1;
    out.insert(out.end(), s2.begin(), s2.end());
    out.resize(static_cast<size_t>(steps) + 1, end);
    out[steps] = 0.0f;
    return out;
}

// LTX2Scheduler: token-count-shifted flow sigmas stretched so the last non-zero one is 0.1.
std::vector<float> ltx2_sigmas(int steps, int image_tokens) {
    check_steps(steps);
    const float max_shift = 2.05f;
    const float base_shift = 0.95f;
    const float terminal = 0.1f;
    const int tokens = image_tokens > 0 ? image_tokens : 4096;
    const float m = (max_shift - base_shift) / (4096.0f - 1024.0f);
    const float b = base_shift - m * 1024.0f;
    const float exp_shift = std::exp(static_cast<float>(tokens) * m + b);

    std::vector<float> out;
    for (int i = 0; i <= steps; ++i) {
        float sigma = 1.0f - static_cast<float>(i) / static_cast<float>(steps);
        if (sigma != 0.0f) sigma = exp_shift / (exp_shift + (1.0f / sigma - 1.0f));
        out.push_back(sigma);
    }
    if (out.size() > 2) {
        const float scale = (1.0f - out[steps - 1]) / (1.0f - terminal);
        if (scale > 1e-8f) {
            for (int i = 0; i < steps; ++i) out[i] = 1.0f - (1.0f - out[i]) / scale;
        }
    }
    out[steps] = 0.0f;
    return out;
}

// BetaScheduler (ComfyUI's beta, alpha = beta = 0.6): timesteps at the Beta(0.6, 0.6)
// quantiles of 1 - i / steps, rounded; a timestep equal to the previous one is skipped, as in
// the reference, so very many steps can give fewer sigmas.
std::vector<float> beta_sigmas(int steps, const NoiseSchedule& schedule) {
    check_steps(steps);
    std::vector<float> out;
    int last_t = -1;
    for (int i = 0; i < steps; ++i) {
        const double p = 1.0 - static_cast<double>(i) / static_cast<double>(steps);
        int t = static_cast<int>(std::llround(beta_quantile(p, 0.6, 0.6) * kMaxT));
        t = std::max(0, std::min(static_cast<int>(kMaxT), t));
        if (t != last_t) out.push_back(schedule.t_to_sigma(static_cast<float>(t)));
        last_t = t;
    }
    out.push_back(0.0f);
    return out;
}

// FLUX.1's schedule (BFL get_schedule): t evenly from 1 to 0, shifted by
// mu = 0.5 + (1.15 - 0.5) (tokens - 256) / (4096 - 256) with exp(mu) / (exp(mu) + 1 / t - 1).
std::vector<float> flux_sigmas(int steps, int image_tokens) {
    check_steps(steps);
    const float tokens = static_cast<float>(image_tokens > 0 ? image_tokens : 4096);
    const float m = (1.15f - 0.5f) / (4096.0f - 256.0f);
    return flux_time_shifted(steps, m * tokens + (0.5f - m * 256.0f));
}

// FLUX.2's schedule (BFL flux2 get_schedule): as flux with the empirical mu of the token and
// step counts.
std::vector<float> flux2_sigmas(int steps, int image_tokens) {
    check_steps(steps);
    return flux_time_shifted(steps,
                             flux2_empirical_mu(image_tokens > 0 ? image_tokens : 4096, steps));
}

// Logit-normal schedule (Ideogram 4's): sigma_i = 1 - sigmoid(mu + std * Phi^-1(i / steps)),
// clamped to [1 / (1 + e^9), 1 / (1 + e^-7.5)], then 0.
std::vector<float> logit_normal_sigmas(int steps, float mu, float std_dev) {
    check_steps(steps);
    SD_CHECK(std::isfinite(mu) && std::isfinite(std_dev) && std_dev > 0.0f,
             "logit_normal needs a finite mu and std > 0, got mu %g std %g", mu, std_dev);
    const double t_min = 1.0 / (1.0 + std::exp(0.5 * 18.0));
    const double t_max = 1.0 / (1.0 + std::exp(0.5 * -15.0));
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
        const double u = static_cast<double>(i) / static_cast<double>(steps);
        double sigma = t_max;  // u = 0: Phi^-1 is -infinity
        if (u > 0.0) sigma = 1.0 - 1.0 / (1.0 + std::exp(-(mu + std_dev * inverse_normal_cdf(u))));
        out.push_back(static_cast<float>(std::min(t_max, std::max(t_min, sigma))));
    }
    out.push_back(0.0f);
    return out;
}

std::vector<float> scheduler_sigmas(Scheduler scheduler, int steps, const NoiseSchedule& schedule,
                                    const SchedulerOptions& options) {
    check_steps(steps);
    const float smin = schedule.sigma_min();
    const float smax = schedule.sigma_max();
    switch (scheduler) {
        case DISCRETE_SCHEDULER:
            return discrete_sigmas(steps, schedule);
        case KARRAS_SCHEDULER:
            return karras_sigmas(steps, smin, smax);
        case EXPONENTIAL_SCHEDULER:
            return exponential_sigmas(steps, smin, smax);
        case AYS_SCHEDULER:
            return ays_sigmas(steps, options.ays_table);
        case GITS_SCHEDULER:
            return gits_sigmas(steps);
        case SGM_UNIFORM_SCHEDULER:
            return sgm_uniform_sigmas(steps, schedule);
        case SIMPLE_SCHEDULER:
            return simple_sigmas(steps, schedule);
        case SMOOTHSTEP_SCHEDULER:
            return smoothstep_sigmas(steps, schedule);
        case KL_OPTIMAL_SCHEDULER:
            return kl_optimal_sigmas(steps, smin, smax);
        case LCM_SCHEDULER:
            return lcm_sigmas(steps, schedule);
        case BONG_TANGENT_SCHEDULER:
            return bong_tangent_sigmas(steps, smin, smax);
        case LTX2_SCHEDULER:
            return ltx2_sigmas(steps, options.image_tokens);
        case LOGIT_NORMAL_SCHEDULER:
            return logit_normal_sigmas(steps, options.logit_normal_mu, options.logit_normal_std);
        case FLUX2_SCHEDULER:
            return flux2_sigmas(steps, options.image_tokens);
        case FLUX_SCHEDULER:
            return flux_sigmas(steps, options.image_tokens);
        case BETA_SCHEDULER:
            return beta_sigmas(steps, schedule);
        default:
            fail("unknown scheduler %d", static_cast<int>(scheduler));
    }
}

}  // namespace sd
