// The samplers of stable-diffusion.cpp's sample_k_diffusion, one function each. Formulas are
// element-wise over contiguous f32 latents in the reference's float arithmetic; each names the
// k-diffusion (or ComfyUI / paper) function it follows.
#include "sampling/samplers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <tuple>
#include <utility>

#include "sampling/brownian_tree.h"
#include "sampling/schedule.h"

namespace sd {

namespace {

// out[i] = f(a[i], rest[i]...) over contiguous f32 tensors of one shape.
template <class F, class... Ts>
Tensor lanes(F&& f, const Tensor& a, const Ts&... rest) {
    Tensor out = Tensor::empty(a.shape());
    float* po = out.data<float>();
    const float* pa = a.data<float>();
    const auto pr = std::make_tuple(rest.template data<float>()...);
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) {
        po[i] = std::apply([&](auto... p) { return f(pa[i], p[i]...); }, pr);
    }
    return out;
}

// sigma_down, sigma_up and the flow renoising factor of an ancestral step.
struct AncestralStep {
    float down;
    float up;
    float alpha_scale;
};

// k-diffusion get_ancestral_step (with eta).
AncestralStep ancestral_step(float sigma_from, float sigma_to, float eta) {
    if (eta <= 0.0f) return {sigma_to, 0.0f, 1.0f};
    float up = 0.0f;
    const float from2 = sigma_from * sigma_from;
    const float to2 = sigma_to * sigma_to;
    if (from2 > 0.0f) {
        const float term = to2 * (from2 - to2) / from2;
        up = std::min(sigma_to, eta * std::sqrt(std::max(term, 0.0f)));
    }
    const float down2 = to2 - up * up;
    return {down2 > 0.0f ? std::sqrt(down2) : 0.0f, up, 1.0f};
}

// Rectified-flow ancestral step (ComfyUI get_ancestral_step_RF as stable-diffusion.cpp's
// get_ancestral_step_flow): step to sigma_down, then x * alpha_scale + noise * sigma_up.
AncestralStep ancestral_step_flow(float sigma_from, float sigma_to, float eta) {
    if (eta <= 0.0f || sigma_from <= 0.0f || sigma_to <= 0.0f) return {sigma_to, 0.0f, 1.0f};
    eta = std::min(eta, 1.0f);  // eta > 1 has no valid flow noise level
    const float ratio = sigma_to / sigma_from;
    float down = sigma_to * (1.0f + (ratio - 1.0f) * eta);
    down = std::max(0.0f, std::min(sigma_to, down));
    const float denom = 1.0f - down;
    if (denom <= 0.0f) return {sigma_to, 0.0f, 1.0f};
    const float alpha_scale = (1.0f - sigma_to) / denom;
    float term = (down / sigma_to) * alpha_scale;
    term = std::max(-1.0f, std::min(1.0f, term));
    const float up = sigma_to * std::sqrt(std::max(1.0f - term * term, 0.0f));
    return {down, up, alpha_scale};
}

AncestralStep ancestral_step(float sigma_from, float sigma_to, float eta, bool flow) {
    return flow ? ancestral_step_flow(sigma_from, sigma_to, eta)
                : ancestral_step(sigma_from, sigma_to, eta);
}

// phi_1(t) = (e^t - 1) / t and phi_2(t) = (phi_1(t) - 1) / t with series near 0 (res samplers).
float phi1(float t) {
    if (std::fabs(t) < 1e-6f) return 1.0f + t * 0.5f + (t * t) / 6.0f;
    return (std::exp(t) - 1.0f) / t;
}

float phi2(float t) {
    if (std::fabs(t) < 1e-6f) return 0.5f + t / 6.0f + (t * t) / 24.0f;
    return (phi1(t) - 1.0f) / t;
}

// One sampling run: the callback, the sigmas, the noise and the per-step report.
class Run {
  public:
    Run(const DenoiseFn& fn, const std::vector<float>& sigmas, Rng& rng,
        const SamplerOptions& options, float eta, const Shape& shape)
        : fn_(fn), sigmas_(sigmas), rng_(rng), options_(options), eta_(eta), shape_(shape) {}

    int steps() const { return static_cast<int>(sigmas_.size()) - 1; }
    float sigma(int i) const { return sigmas_[i]; }
    const std::vector<float>& sigmas() const { return sigmas_; }
    float eta() const { return eta_; }
    bool flow() const { return options_.is_flow; }
    float ge_gamma() const { return options_.ge_gamma; }
    int lms_order() const { return options_.lms_order; }

    // The x0 prediction at (x, sigma); step as the reference numbers model calls.
    Tensor denoise(const Tensor& x, float sigma, int step) {
        Denoised d = fn_(x, DenoiseCall{sigma, step, false});
        return checked(d.pred, "prediction");
    }

    // The guided and the unconditional x0 predictions (cfg_pp).
    std::pair<Tensor, Tensor> denoise_with_uncond(const Tensor& x, float sigma, int step) {
        Denoised d = fn_(x, DenoiseCall{sigma, step, true});
        return {checked(d.pred, "prediction"), checked(d.pred_uncond, "unconditional prediction")};
    }

    // randn_like(x) from the sampler generator.
    Tensor noise() { return randn_tensor(rng_, shape_); }
    const Shape& shape() const { return shape_; }

    // A seed drawn from the sampler generator (the Brownian tree's).
    uint64_t draw_seed() {
        const std::vector<float> v = rng_.randn(2);
        uint32_t lo = 0, hi = 0;
        std::memcpy(&lo, &v[0], sizeof lo);
        std::memcpy(&hi, &v[1], sizeof hi);
        return (static_cast<uint64_t>(hi) << 32) | lo;
    }

    // Reports step i (0-based) as done; throws Cancelled when the hook says stop.
    void done(int i, const Tensor& x, const Tensor& denoised) {
        if (!options_.on_step) return;
        if (!options_.on_step(StepInfo{i + 1, steps(), sigmas_[i], x, denoised})) throw Cancelled();
    }

  private:
    Tensor checked(const Tensor& t, const char* what) const {
        SD_CHECK(t.defined(), "the denoiser returned no %s", what);
        SD_CHECK(t.dtype() == DType::F32, "the denoiser's %s is not f32", what);
        SD_CHECK(t.shape() == shape_, "the denoiser's %s has shape %s, expected %s", what,
                 t.shape().to_string().c_str(), shape_.to_string().c_str());
        return t.contiguous();
    }

    const DenoiseFn& fn_;
    const std::vector<float>& sigmas_;
    Rng& rng_;
    const SamplerOptions& options_;
    float eta_;
    Shape shape_;
};

// Euler without churn (k-diffusion sample_euler).
Tensor sample_euler(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        Tensor den = r.denoise(x, sigma, i + 1);
        const float dt = r.sigma(i + 1) - sigma;
        x = lanes([&](float xv, float dv) { return xv + ((xv - dv) / sigma) * dt; }, x, den);
        r.done(i, x, den);
    }
    return x;
}

// Euler ancestral (k-diffusion sample_euler_ancestral; sample_euler_ancestral_RF for flow
// models), written as the reference's lerp toward the prediction.
Tensor sample_euler_ancestral(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        const float sigma_to = r.sigma(i + 1);
        Tensor den = r.denoise(x, sigma, i + 1);
        if (sigma_to == 0.0f) {
            x = den;
        } else if (r.eta() == 0.0f) {
            const float ratio = sigma_to / sigma;
            x = lanes([&](float xv, float dv) { return ratio * xv + (1.0f - ratio) * dv; }, x, den);
        } else {
            const AncestralStep st = ancestral_step(sigma, sigma_to, r.eta(), r.flow());
            const float ratio = st.down / sigma;
            x = lanes([&](float xv, float dv) { return ratio * xv + (1.0f - ratio) * dv; }, x, den);
            if (st.up > 0.0f) {
                const float alpha = r.flow() ? st.alpha_scale : 1.0f;
                Tensor n = r.noise();
                x = lanes(
                    [&](float xv, float nv) { return (r.flow() ? xv * alpha : xv) + nv * st.up; },
                    x, n);
            }
        }
        r.done(i, x, den);
    }
    return x;
}

// Heun's method, Euler on the last step (k-diffusion sample_heun).
Tensor sample_heun(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        const float s0 = r.sigma(i);
        const float s1 = r.sigma(i + 1);
        Tensor den = r.denoise(x, s0, -(i + 1));
        Tensor d = lanes([&](float xv, float dv) { return (xv - dv) / s0; }, x, den);
        const float dt = s1 - s0;
        if (s1 == 0.0f) {
            x = lanes([&](float xv, float dd) { return xv + dd * dt; }, x, d);
        } else {
            Tensor x2 = lanes([&](float xv, float dd) { return xv + dd * dt; }, x, d);
            Tensor den2 = r.denoise(x2, s1, i + 1);
            x = lanes(
                [&](float xv, float dd, float x2v, float d2v) {
                    const float d_avg = (dd + (x2v - d2v) / s1) / 2.0f;
                    return xv + d_avg * dt;
                },
                x, d, x2, den2);
        }
        r.done(i, x, den);
    }
    return x;
}

// DPM-Solver-2 with the midpoint in log sigma (k-diffusion sample_dpm_2).
Tensor sample_dpm2(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        const float s0 = r.sigma(i);
        const float s1 = r.sigma(i + 1);
        Tensor den = r.denoise(x, s0, -(i + 1));
        Tensor d = lanes([&](float xv, float dv) { return (xv - dv) / s0; }, x, den);
        if (s1 == 0.0f) {
            const float dt = s1 - s0;
            x = lanes([&](float xv, float dd) { return xv + dd * dt; }, x, d);
        } else {
            const float sigma_mid = std::exp(0.5f * (std::log(s0) + std::log(s1)));
            const float dt_1 = sigma_mid - s0;
            const float dt_2 = s1 - s0;
            Tensor x2 = lanes([&](float xv, float dd) { return xv + dd * dt_1; }, x, d);
            Tensor den2 = r.denoise(x2, sigma_mid, i + 1);
            x = lanes([&](float xv, float x2v,
                          float d2v) { return xv + ((x2v - d2v) / sigma_mid) * dt_2; },
                      x, x2, den2);
        }
        r.done(i, x, den);
    }
    return x;
}

// DPM-Solver++(2S) ancestral (k-diffusion sample_dpmpp_2s_ancestral).
Tensor sample_dpmpp_2s_ancestral(Run& r, Tensor x) {
    auto t_fn = [](float sigma) { return -std::log(sigma); };
    auto sigma_fn = [](float t) { return std::exp(-t); };
    for (int i = 0; i < r.steps(); ++i) {
        Tensor den = r.denoise(x, r.sigma(i), -(i + 1));
        const AncestralStep st = ancestral_step(r.sigma(i), r.sigma(i + 1), r.eta());
        if (st.down == 0.0f) {
            x = den;
        } else {
            const float t = t_fn(r.sigma(i));
            const float t_next = t_fn(st.down);
            const float h = t_next - t;
            const float s = t + 0.5f * h;
            const float sigma_s = sigma_fn(s);
            const float a1 = sigma_s / sigma_fn(t);
            const float b1 = std::exp(-h * 0.5f) - 1;
            Tensor x2 = lanes([&](float xv, float dv) { return a1 * xv - b1 * dv; }, x, den);
            Tensor den2 = r.denoise(x2, sigma_s, i + 1);
            const float a2 = sigma_fn(t_next) / sigma_fn(t);
            const float b2 = std::exp(-h) - 1;
            x = lanes([&](float xv, float d2v) { return a2 * xv - b2 * d2v; }, x, den2);
        }
        if (r.sigma(i + 1) > 0.0f) {
            Tensor n = r.noise();
            x = lanes([&](float xv, float nv) { return xv + nv * st.up; }, x, n);
        }
        r.done(i, x, den);
    }
    return x;
}

// DPM-Solver++(2S) ancestral for rectified flow (ComfyUI sample_dpmpp_2s_ancestral_RF as
// stable-diffusion.cpp's sample_dpmpp_2s_ancestral_flow, midpoint in half-log-SNR).
Tensor sample_dpmpp_2s_ancestral_flow(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        const float sigma_to = r.sigma(i + 1);
        const bool first_at_one = (1.0f - sigma < 1e-6f);  // sigma_s == sigma: reuse the call
        Tensor den = r.denoise(x, sigma, (first_at_one ? 1 : -1) * (i + 1));
        if (sigma_to == 0.0f) {
            x = den;
            r.done(i, x, den);
            continue;
        }
        const AncestralStep st = ancestral_step_flow(sigma, sigma_to, r.eta());
        Tensor d_i = den;
        if (!first_at_one) {
            const float exp_s = std::sqrt(((1 - sigma) / sigma) * ((1 - st.down) / st.down));
            const float sigma_s = 1.0f / (exp_s + 1.0f);
            const float ratio_s = sigma_s / sigma;
            Tensor u = lanes(
                [&](float xv, float dv) { return xv * ratio_s + dv * (1.0f - ratio_s); }, x, den);
            d_i = r.denoise(u, sigma_s, i + 1);
        }
        const float ratio = st.down / sigma;
        x = lanes([&](float xv, float dv) { return xv * ratio + dv * (1.0f - ratio); }, x, d_i);
        if (r.eta() > 0.0f) {
            Tensor n = r.noise();
            x = lanes([&](float xv, float nv) { return st.alpha_scale * xv + nv * st.up; }, x, n);
        }
        r.done(i, x, den);
    }
    return x;
}

// DPM-Solver++(2M) (k-diffusion sample_dpmpp_2m).
Tensor sample_dpmpp_2m(Run& r, Tensor x) {
    auto t_fn = [](float sigma) { return -std::log(sigma); };
    Tensor old_den;
    for (int i = 0; i < r.steps(); ++i) {
        Tensor den = r.denoise(x, r.sigma(i), i + 1);
        const float t = t_fn(r.sigma(i));
        const float t_next = t_fn(r.sigma(i + 1));
        const float h = t_next - t;
        const float a = r.sigma(i + 1) / r.sigma(i);
        const float b = std::exp(-h) - 1.f;
        if (i == 0 || r.sigma(i + 1) == 0.0f) {
            x = lanes([&](float xv, float dv) { return a * xv - b * dv; }, x, den);
        } else {
            const float h_last = t - t_fn(r.sigma(i - 1));
            const float rr = h_last / h;
            const float c1 = 1.f + 1.f / (2.f * rr);
            const float c2 = 1.f / (2.f * rr);
            x = lanes(
                [&](float xv, float dv, float ov) { return a * xv - b * (c1 * dv - c2 * ov); }, x,
                den, old_den);
        }
        old_den = den;
        r.done(i, x, den);
    }
    return x;
}

// DPM-Solver++(2M) with the averaged step (AUTOMATIC1111 discussion 8457, "dpm++2mv2").
Tensor sample_dpmpp_2m_v2(Run& r, Tensor x) {
    auto t_fn = [](float sigma) { return -std::log(sigma); };
    Tensor old_den;
    for (int i = 0; i < r.steps(); ++i) {
        Tensor den = r.denoise(x, r.sigma(i), i + 1);
        const float t = t_fn(r.sigma(i));
        const float t_next = t_fn(r.sigma(i + 1));
        const float h = t_next - t;
        const float a = r.sigma(i + 1) / r.sigma(i);
        if (i == 0 || r.sigma(i + 1) == 0.0f) {
            const float b = std::exp(-h) - 1.f;
            x = lanes([&](float xv, float dv) { return a * xv - b * dv; }, x, den);
        } else {
            const float h_last = t - t_fn(r.sigma(i - 1));
            const float h_min = std::min(h_last, h);
            const float h_max = std::max(h_last, h);
            const float rr = h_max / h_min;
            const float h_d = (h_max + h_min) / 2.f;
            const float b = std::exp(-h_d) - 1.f;
            const float c1 = 1.f + 1.f / (2.f * rr);
            const float c2 = 1.f / (2.f * rr);
            x = lanes(
                [&](float xv, float dv, float ov) { return a * xv - b * (c1 * dv - c2 * ov); }, x,
                den, old_den);
        }
        old_den = den;
        r.done(i, x, den);
    }
    return x;
}

// Improved PNDM: Adams-Bashforth on d = (x - x0) / sigma up to order 4 (diff-solvers-main
// ipndm, k-diffusion sample_ipndm). variable_step: the variable-step order-2 weights (ipndm_v).
Tensor sample_ipndm_impl(Run& r, Tensor x, bool variable_step) {
    constexpr int kMaxOrder = 4;
    std::vector<Tensor> hist;  // the last kMaxOrder - 1 derivatives, oldest first
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        Tensor den = r.denoise(x, sigma, i + 1);
        Tensor d = lanes([&](float xv, float dv) { return (xv - dv) / sigma; }, x, den);
        const int order = std::min(kMaxOrder, i + 1);
        const float h = r.sigma(i + 1) - sigma;
        const size_t n = hist.size();
        if (order == 1) {
            x = lanes([&](float xv, float dc) { return xv + dc * h; }, x, d);
        } else if (order == 2 && variable_step) {
            const float h_prev = sigma - r.sigma(i - 1);
            const float q = h / h_prev;
            x = lanes([&](float xv, float dc,
                          float p1) { return xv + (((2.f + q) * dc - q * p1) / 2.f) * h; },
                      x, d, hist[n - 1]);
        } else if (order == 2) {
            x = lanes(
                [&](float xv, float dc, float p1) { return xv + ((3.f * dc - p1) / 2.f) * h; }, x,
                d, hist[n - 1]);
        } else if (order == 3) {
            x = lanes(
                [&](float xv, float dc, float p1, float p2) {
                    return xv + ((23.f * dc - 16.f * p1 + 5.f * p2) / 12.f) * h;
                },
                x, d, hist[n - 1], hist[n - 2]);
        } else {
            x = lanes(
                [&](float xv, float dc, float p1, float p2, float p3) {
                    return xv + ((55.f * dc - 59.f * p1 + 37.f * p2 - 9.f * p3) / 24.f) * h;
                },
                x, d, hist[n - 1], hist[n - 2], hist[n - 3]);
        }
        if (hist.size() == kMaxOrder - 1) hist.erase(hist.begin());
        hist.push_back(d);
        r.done(i, x, den);
    }
    return x;
}

// Latent Consistency Model sampling: jump to x0, renoise to the next sigma (k-diffusion
// sample_lcm; flow models renoise as (1 - sigma) x0 + sigma noise).
Tensor sample_lcm(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        Tensor den = r.denoise(x, r.sigma(i), i + 1);
        x = den;
        const float next = r.sigma(i + 1);
        if (next > 0.0f) {
            const float keep = r.flow() ? (1 - next) : 1.0f;
            Tensor n = r.noise();
            x = lanes([&](float xv, float nv) { return (r.flow() ? xv * keep : xv) + nv * next; },
                      x, n);
        }
        r.done(i, x, den);
    }
    return x;
}

// Trajectory Consistency Distillation, strategic stochastic sampling (Zheng et al. 2024,
// algorithm 4) on the given sigmas, in k-diffusion's scaling x = x_vp / sqrt(alpha_prod).
Tensor sample_tcd(Run& r, Tensor x) {
    const std::vector<double> alphas = ddpm_alphas_cumprod_f64();
    std::vector<double> compvis_sigmas(alphas.size());
    for (size_t i = 0; i < alphas.size(); ++i)
        compvis_sigmas[i] = std::sqrt((1 - alphas[i]) / alphas[i]);
    // The training timestep whose sigma is nearest to s.
    auto timestep_of = [&](float s) -> int {
        auto it =
            std::lower_bound(compvis_sigmas.begin(), compvis_sigmas.end(), static_cast<double>(s));
        if (it == compvis_sigmas.begin()) return 0;
        if (it == compvis_sigmas.end()) return kTrainTimesteps - 1;
        const int high = static_cast<int>(it - compvis_sigmas.begin());
        const int low = high - 1;
        return std::abs(compvis_sigmas[high] - s) < std::abs(compvis_sigmas[low] - s) ? high : low;
    };
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        const float sigma_to = r.sigma(i + 1);
        const int prev_t = timestep_of(sigma_to);
        const int t_s = std::clamp(static_cast<int>(std::floor((1 - r.eta()) * prev_t)), 0,
                                   kTrainTimesteps - 1);
        Tensor den = r.denoise(x, sigma, i + 1);
        const float alpha_prod_t_prev = 1.0f / (sigma_to * sigma_to + 1.0f);
        const float alpha_prod_s = static_cast<float>(alphas[t_s]);
        const float beta_prod_s = 1.0f - alpha_prod_s;
        const float c_x0 = std::sqrt(alpha_prod_s / alpha_prod_t_prev);
        const float c_eps = std::sqrt(beta_prod_s / alpha_prod_t_prev);
        // x_s = sqrt(a_s) x0 + sqrt(1 - a_s) eps, eps = (x - x0) / sigma
        x = lanes([&](float xv, float dv) { return c_x0 * dv + c_eps * ((xv - dv) / sigma); }, x,
                  den);
        if (r.eta() > 0.0f && sigma_to > 0.0f) {
            const float keep = std::sqrt(alpha_prod_t_prev / alpha_prod_s);
            const float add = std::sqrt(1.0f / alpha_prod_t_prev - 1.0f / alpha_prod_s);
            Tensor n = r.noise();
            x = lanes([&](float xv, float nv) { return keep * xv + add * nv; }, x, n);
        }
        r.done(i, x, den);
    }
    return x;
}

// RES multistep: second-order exponential integrator on the last two predictions (ComfyUI
// sample_res_multistep, with its ancestral noise).
Tensor sample_res_multistep(Run& r, Tensor x) {
    auto t_fn = [](float sigma) { return -std::log(sigma); };
    Tensor old_den;
    float old_sigma_down = 0.0f;
    for (int i = 0; i < r.steps(); ++i) {
        Tensor den = r.denoise(x, r.sigma(i), i + 1);
        const float sigma_from = r.sigma(i);
        const float sigma_to = r.sigma(i + 1);
        const AncestralStep st = ancestral_step(sigma_from, sigma_to, r.eta(), r.flow());
        if (st.down == 0.0f || !old_den.defined()) {
            const float dt = st.down - sigma_from;
            x = lanes([&](float xv, float dv) { return xv + ((xv - dv) / sigma_from) * dt; }, x,
                      den);
        } else {
            const float t = t_fn(sigma_from);
            const float t_old = t_fn(old_sigma_down);
            const float t_next = t_fn(st.down);
            const float t_prev = t_fn(r.sigma(i - 1));
            const float h = t_next - t;
            const float c2 = (t_prev - t_old) / h;
            const float p1 = phi1(-h);
            const float p2 = phi2(-h);
            float b1 = p1 - p2 / c2;
            float b2 = p2 / c2;
            if (!std::isfinite(b1)) b1 = 0.0f;
            if (!std::isfinite(b2)) b2 = 0.0f;
            const float decay = std::exp(-h);
            x = lanes(
                [&](float xv, float dv, float ov) { return decay * xv + h * (b1 * dv + b2 * ov); },
                x, den, old_den);
        }
        if (sigma_to > 0.0f && st.up > 0.0f) {
            const float alpha = st.alpha_scale;
            Tensor n = r.noise();
            x = lanes([&](float xv, float nv) { return (r.flow() ? xv * alpha : xv) + nv * st.up; },
                      x, n);
        }
        old_den = den;
        old_sigma_down = st.down;
        r.done(i, x, den);
    }
    return x;
}

// RES 2s: two-stage exponential Runge-Kutta with c2 = 1/2 (ComfyUI sample_res_2s).
Tensor sample_res_2s(Run& r, Tensor x) {
    constexpr float c2 = 0.5f;
    auto t_fn = [](float sigma) { return -std::log(sigma); };
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma_from = r.sigma(i);
        const float sigma_to = r.sigma(i + 1);
        Tensor den = r.denoise(x, sigma_from, -(i + 1));
        const AncestralStep st = ancestral_step(sigma_from, sigma_to, r.eta(), r.flow());
        const Tensor x0 = x;
        if (st.down == 0.0f || sigma_from == 0.0f) {
            x = den;
        } else {
            const float t = t_fn(sigma_from);
            const float h = t_fn(st.down) - t;
            const float a21 = c2 * phi1(-h * c2);
            const float b2 = phi2(-h) / c2;
            const float b1 = phi1(-h) - b2;
            const float sigma_c2 = std::exp(-(t + h * c2));
            const float ha21 = h * a21;
            Tensor x2 =
                lanes([&](float x0v, float dv) { return x0v + (dv - x0v) * ha21; }, x0, den);
            Tensor den2 = r.denoise(x2, sigma_c2, i + 1);
            x = lanes([&](float x0v, float dv,
                          float d2v) { return x0v + h * (b1 * (dv - x0v) + b2 * (d2v - x0v)); },
                      x0, den, den2);
        }
        if (sigma_to > 0.0f && st.up > 0.0f) {
            const float alpha = st.alpha_scale;
            Tensor n = r.noise();
            x = lanes([&](float xv, float nv) { return (r.flow() ? xv * alpha : xv) + nv * st.up; },
                      x, n);
        }
        r.done(i, x, den);
    }
    return x;
}

// ER-SDE-Solver-3 (Cui et al. 2023, ComfyUI sample_er_sde) with its 200-point integrals.
Tensor sample_er_sde(Run& r, Tensor x) {
    constexpr int kMaxStage = 3;
    constexpr int kPoints = 200;
    const bool flow = r.flow();
    auto flow_sigma = [](float s) { return std::min(std::max(s, 1e-6f), 1.0f - 1e-4f); };
    auto lambda_of = [&](float s) {  // er_lambda: sigma, or sigma / alpha for flow models
        if (flow) {
            s = flow_sigma(s);
            return s / std::max(1.0f - s, 1e-6f);
        }
        return std::max(s, 1e-6f);
    };
    auto alpha_of = [&](float s) { return flow ? 1.0f - flow_sigma(s) : 1.0f; };
    auto noise_scaler = [](float v) {  // ER-SDE's default noise scale function
        v = std::max(v, 0.0f);
        return v * (std::exp(std::pow(v, 0.3f)) + 10.0f);
    };

    std::vector<float> sigmas = r.sigmas();
    if (flow) {
        for (size_t i = 0; i + 1 < sigmas.size(); ++i) {
            if (sigmas[i] > 1.0f) sigmas[i] = flow_sigma(sigmas[i]);
        }
    }
    std::vector<float> lambdas(sigmas.size());
    for (size_t i = 0; i < sigmas.size(); ++i) lambdas[i] = lambda_of(sigmas[i]);

    Tensor old_den, old_den_d;
    for (int i = 0; i < r.steps(); ++i) {
        Tensor den = r.denoise(x, sigmas[i], i + 1);
        const int stage = std::min(kMaxStage, i + 1);
        if (sigmas[i + 1] == 0.0f) {
            x = den;
        } else {
            const float ls = lambdas[i];
            const float lt = lambdas[i + 1];
            const float alpha_s = alpha_of(sigmas[i]);
            const float alpha_t = alpha_of(sigmas[i + 1]);
            const float scaled_s = noise_scaler(ls);
            const float scaled_t = noise_scaler(lt);
            const float r_alpha = alpha_s > 0.0f ? alpha_t / alpha_s : 0.0f;
            const float rr = scaled_s > 0.0f ? scaled_t / scaled_s : 0.0f;
            const float cx = r_alpha * rr;
            const float cd = alpha_t * (1.0f - rr);
            x = lanes([&](float xv, float dv) { return cx * xv + cd * dv; }, x, den);

            if (stage >= 2 && old_den.defined()) {
                const float dt = lt - ls;
                const float step = -dt / static_cast<float>(kPoints);
                float s = 0.0f;
                float s_u = 0.0f;
                for (int p = 0; p < kPoints; ++p) {
                    const float lambda_pos = lt + static_cast<float>(p) * step;
                    const float scaled_pos = noise_scaler(lambda_pos);
                    if (scaled_pos <= 0.0f) continue;
                    s += 1.0f / scaled_pos;
                    if (stage >= 3 && old_den_d.defined()) s_u += (lambda_pos - ls) / scaled_pos;
                }
                s *= step;
                const float denom_d = ls - lambdas[i - 1];
                if (std::fabs(denom_d) > 1e-12f) {
                    const float coeff_d = alpha_t * (dt + s * scaled_t);
                    Tensor den_d = lanes([&](float dv, float ov) { return (dv - ov) / denom_d; },
                                         den, old_den);
                    x = lanes([&](float xv, float dd) { return xv + coeff_d * dd; }, x, den_d);
                    if (stage >= 3 && old_den_d.defined()) {
                        const float denom_u = (ls - lambdas[i - 2]) * 0.5f;
                        if (std::fabs(denom_u) > 1e-12f) {
                            s_u *= step;
                            const float coeff_u = alpha_t * (0.5f * dt * dt + s_u * scaled_t);
                            x = lanes(
                                [&](float xv, float dd, float od) {
                                    return xv + coeff_u * ((dd - od) / denom_u);
                                },
                                x, den_d, old_den_d);
                        }
                    }
                    old_den_d = den_d;
                }
            }
            const float noise_sq = lt * lt - ls * ls * rr * rr;
            if (r.eta() > 0.0f && noise_sq > 0.0f) {
                const float scale = alpha_t * std::sqrt(std::max(noise_sq, 0.0f));
                Tensor n = r.noise();
                x = lanes([&](float xv, float nv) { return xv + nv * scale; }, x, n);
            }
        }
        old_den = den;
        r.done(i, x, den);
    }
    return x;
}

// Euler CFG++: the step's direction from the unconditional prediction (Chung et al. 2024,
// ComfyUI sample_euler_cfg_pp).
Tensor sample_euler_cfg_pp(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        const float next = r.sigma(i + 1);
        auto [den, uncond] = r.denoise_with_uncond(x, sigma, i + 1);
        x = lanes([&](float xv, float dv, float uv) { return dv + ((xv - uv) / sigma) * next; }, x,
                  den, uncond);
        r.done(i, x, den);
    }
    return x;
}

// Euler ancestral CFG++ (ComfyUI sample_euler_ancestral_cfg_pp).
Tensor sample_euler_ancestral_cfg_pp(Run& r, Tensor x) {
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        auto [den, uncond] = r.denoise_with_uncond(x, sigma, i + 1);
        const AncestralStep st = ancestral_step(sigma, r.sigma(i + 1), r.eta());
        x = lanes([&](float xv, float dv, float uv) { return dv + ((xv - uv) / sigma) * st.down; },
                  x, den, uncond);
        if (r.sigma(i + 1) > 0.0f) {
            Tensor n = r.noise();
            x = lanes([&](float xv, float nv) { return xv + nv * st.up; }, x, n);
        }
        r.done(i, x, den);
    }
    return x;
}

// Gradient estimation: Euler with d replaced by gamma d + (1 - gamma) d_prev (Permenter & Yuan
// 2024, ComfyUI sample_gradient_estimation), with ancestral noise for eta > 0.
Tensor sample_gradient_estimation(Run& r, Tensor x) {
    const float gamma = r.ge_gamma();
    Tensor old_d;
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        const float sigma_to = r.sigma(i + 1);
        Tensor den = r.denoise(x, sigma, i + 1);
        if (sigma_to == 0.0f) {
            x = den;
        } else {
            const AncestralStep st = ancestral_step(sigma, sigma_to, r.eta(), r.flow());
            Tensor d = lanes([&](float xv, float dv) { return (xv - dv) / sigma; }, x, den);
            const float dt = st.down - sigma;
            if (old_d.defined()) {
                x = lanes([&](float xv, float dd,
                              float od) { return xv + (dd * gamma + od * (1.0f - gamma)) * dt; },
                          x, d, old_d);
            } else {
                x = lanes([&](float xv, float dd) { return xv + dd * dt; }, x, d);
            }
            old_d = d;
            if (st.up > 0.0f) {
                const float alpha = st.alpha_scale;
                Tensor n = r.noise();
                x = lanes(
                    [&](float xv, float nv) { return (r.flow() ? xv * alpha : xv) + nv * st.up; },
                    x, n);
            }
        }
        r.done(i, x, den);
    }
    return x;
}

// DPM-Solver++(2M) SDE, midpoint solver (k-diffusion sample_dpmpp_2m_sde, solver_type
// "midpoint", s_noise 1). Flow models step in the half log-SNR log((1 - s) / s), with a first
// sigma of 1 moved to 1 - 1e-4, as stable-diffusion.cpp does. noise(sigma, sigma_next) gives the
// step's standard-normal noise.
template <class Noise>
Tensor sample_dpmpp_2m_sde_impl(Run& r, Tensor x, Noise&& noise) {
    const bool flow = r.flow();
    const float eta = r.eta();
    auto lambda = [flow](float s) {
        if (!flow) return -std::log(std::max(s, 1e-20f));
        s = std::max(1e-6f, std::min(1.0f - 1e-6f, s));
        return std::log((1.0f - s) / s);
    };
    std::vector<float> sig = r.sigmas();
    if (flow && sig[0] >= 1.0f) sig[0] = 1.0f - 1e-4f;
    Tensor old_den;
    float h_last = 0.0f;
    for (int i = 0; i < r.steps(); ++i) {
        Tensor den = r.denoise(x, sig[i], i + 1);
        if (sig[i + 1] == 0.0f) {
            x = den;
        } else {
            const float ls = lambda(sig[i]), lt = lambda(sig[i + 1]);
            const float h = lt - ls;
            const float h_eta = h * (eta + 1.0f);
            const float alpha_t = sig[i + 1] * std::exp(lt);
            const float a = (sig[i + 1] / sig[i]) * std::exp(-h * eta);
            const float b = alpha_t * -std::expm1(-h_eta);
            if (old_den.defined() && h != 0.0f && h_last != 0.0f) {
                const float c = 0.5f * b * (h / h_last);  // 0.5 b / r with r = h_last / h
                x = lanes(
                    [&](float xv, float dv, float ov) { return a * xv + b * dv + c * (dv - ov); },
                    x, den, old_den);
            } else {
                x = lanes([&](float xv, float dv) { return a * xv + b * dv; }, x, den);
            }
            const float scale =
                eta > 0.0f ? sig[i + 1] * std::sqrt(std::max(-std::expm1(-2.0f * h * eta), 0.0f))
                           : 0.0f;
            if (scale > 0.0f) {
                Tensor z = noise(sig[i], sig[i + 1]);
                x = lanes([&](float xv, float zv) { return xv + zv * scale; }, x, z);
            }
            h_last = h;
        }
        old_den = den;
        r.done(i, x, den);
    }
    return x;
}

// dpm++2m_sde: fresh sampler-generator noise each step.
Tensor sample_dpmpp_2m_sde(Run& r, Tensor x) {
    return sample_dpmpp_2m_sde_impl(r, std::move(x), [&r](float, float) { return r.noise(); });
}

// dpm++2m_sde_bt: the noise of a step is the increment of one seeded Brownian motion over
// [0, sigma_max] between the step's sigmas (brownian_tree.h), so the same seed gives the same
// picture at different step counts (k-diffusion's BrownianTreeNoiseSampler, "_gpu" in ComfyUI).
Tensor sample_dpmpp_2m_sde_bt(Run& r, Tensor x) {
    const BrownianTree tree(r.draw_seed(), 0.0f, r.sigma(0), r.shape());
    return sample_dpmpp_2m_sde_impl(
        r, std::move(x), [&tree](float s, float s_next) { return tree.noise(s, s_next); });
}

// The integral over [t[i], t[i + 1]] of the Lagrange basis polynomial of node t[i - j] among
// t[i], ..., t[i - order + 1] (k-diffusion linear_multistep_coeff), exactly: the product is
// expanded into polynomial coefficients and integrated term by term, in double.
double lms_coefficient(int order, const std::vector<float>& t, int i, int j) {
    std::vector<double> poly = {1.0};  // poly[d]: the coefficient of tau^d
    for (int k = 0; k < order; ++k) {
        if (k == j) continue;
        const double tk = t[i - k];
        const double denom = static_cast<double>(t[i - j]) - tk;
        std::vector<double> next(poly.size() + 1, 0.0);
        for (size_t d = 0; d < poly.size(); ++d) {
            next[d + 1] += poly[d] / denom;
            next[d] -= poly[d] * tk / denom;
        }
        poly = std::move(next);
    }
    auto antiderivative = [&poly](double x) {
        double acc = 0.0;
        for (size_t d = poly.size(); d-- > 0;) acc = acc * x + poly[d] / static_cast<double>(d + 1);
        return acc * x;
    };
    return antiderivative(t[i + 1]) - antiderivative(t[i]);
}

// Linear multistep (k-diffusion sample_lms): Adams-Bashforth on the derivative history with
// coefficients integrated over the actual sigmas, up to `lms_order` previous derivatives.
Tensor sample_lms(Run& r, Tensor x) {
    const int order = r.lms_order();
    std::deque<Tensor> ds;
    for (int i = 0; i < r.steps(); ++i) {
        const float sigma = r.sigma(i);
        Tensor den = r.denoise(x, sigma, i + 1);
        ds.push_back(lanes([&](float xv, float dv) { return (xv - dv) / sigma; }, x, den));
        if (static_cast<int>(ds.size()) > order) ds.pop_front();
        const int cur = std::min(i + 1, order);
        Tensor acc = Tensor::zeros(x.shape());
        for (int j = 0; j < cur; ++j) {
            const float c = static_cast<float>(lms_coefficient(cur, r.sigmas(), i, j));
            acc = lanes([c](float av, float dv) { return av + c * dv; }, acc,
                        ds[ds.size() - 1 - static_cast<size_t>(j)]);
        }
        x = lanes([](float xv, float av) { return xv + av; }, x, acc);
        r.done(i, x, den);
    }
    return x;
}

// sigmas a sampler can step through: >= 2 finite values, non-increasing, all but the last > 0.
void check_sigmas(const std::vector<float>& sigmas) {
    SD_CHECK(sigmas.size() >= 2, "sampling needs at least 2 sigmas, got %zu", sigmas.size());
    for (size_t i = 0; i < sigmas.size(); ++i) {
        SD_CHECK(std::isfinite(sigmas[i]), "sigma %zu is not finite", i);
        SD_CHECK(sigmas[i] >= 0.0f, "sigma %zu is negative (%g)", i, sigmas[i]);
        SD_CHECK(i + 1 == sigmas.size() || sigmas[i] > 0.0f, "sigma %zu is 0 before the last", i);
        SD_CHECK(i == 0 || sigmas[i] <= sigmas[i - 1], "sigmas increase at %zu (%g after %g)", i,
                 sigmas[i], sigmas[i - 1]);
    }
}

}  // namespace

float default_eta(SampleMethod method) {
    switch (method) {
        case EULER_A_SAMPLE_METHOD:
        case DPMPP2S_A_SAMPLE_METHOD:
        case ER_SDE_SAMPLE_METHOD:
        case EULER_A_CFG_PP_SAMPLE_METHOD:
        case DPMPP2M_SDE_SAMPLE_METHOD:
        case DPMPP2M_SDE_BT_SAMPLE_METHOD:
            return 1.0f;
        default:
            return 0.0f;
    }
}

float resolve_eta(SampleMethod method, float eta) {
    if (eta == INFINITY) return default_eta(method);
    SD_CHECK(std::isfinite(eta) && eta >= 0.0f, "eta must be a number >= 0, got %g", eta);
    return eta;
}

bool needs_uncond(SampleMethod method) {
    return method == EULER_CFG_PP_SAMPLE_METHOD || method == EULER_A_CFG_PP_SAMPLE_METHOD;
}

std::vector<float> custom_sigmas(const float* values, int count) {
    SD_CHECK(values != nullptr || count == 0, "custom sigmas: no values");
    SD_CHECK(count >= 2, "custom sigmas need at least 2 values, got %d", count);
    std::vector<float> out(values, values + count);
    for (int i = 0; i < count; ++i) {
        SD_CHECK(std::isfinite(out[i]), "custom sigma %d is not finite", i);
        SD_CHECK(i == 0 || out[i] < out[i - 1],
                 "custom sigmas must decrease: value %d (%g) is not below %g", i, out[i],
                 out[i - 1]);
    }
    SD_CHECK(out.back() >= 0.0f, "custom sigmas must not be negative (last is %g)", out.back());
    return out;
}

Tensor sample(SampleMethod method, const DenoiseFn& denoise, Tensor x,
              const std::vector<float>& sigmas, Rng& noise_rng, const SamplerOptions& options) {
    SD_CHECK(method >= 0 && method < SAMPLE_METHOD_COUNT, "unknown sampling method %d",
             static_cast<int>(method));
    SD_CHECK(denoise != nullptr, "sample: no denoise callback");
    SD_CHECK(x.defined() && x.dtype() == DType::F32, "sample: the latent must be an f32 tensor");
    check_sigmas(sigmas);
    const float eta = resolve_eta(method, options.eta);
    SD_CHECK(std::isfinite(options.ge_gamma), "euler_ge gamma must be finite");
    SD_CHECK(options.lms_order >= 1 && options.lms_order <= kMaxLmsOrder,
             "lms order must be 1 to %d, got %d", kMaxLmsOrder, options.lms_order);

    Run run(denoise, sigmas, noise_rng, options, eta, x.shape());
    x = x.clone();  // contiguous and our own
    switch (method) {
        case EULER_SAMPLE_METHOD:
            return sample_euler(run, x);
        case EULER_A_SAMPLE_METHOD:
        case DDIM_TRAILING_SAMPLE_METHOD:  // DDIM (trailing) is Euler ancestral on its sigmas
            return sample_euler_ancestral(run, x);
        case HEUN_SAMPLE_METHOD:
            return sample_heun(run, x);
        case DPM2_SAMPLE_METHOD:
            return sample_dpm2(run, x);
        case DPMPP2S_A_SAMPLE_METHOD:
            return options.is_flow ? sample_dpmpp_2s_ancestral_flow(run, x)
                                   : sample_dpmpp_2s_ancestral(run, x);
        case DPMPP2M_SAMPLE_METHOD:
            return sample_dpmpp_2m(run, x);
        case DPMPP2Mv2_SAMPLE_METHOD:
            return sample_dpmpp_2m_v2(run, x);
        case IPNDM_SAMPLE_METHOD:
            return sample_ipndm_impl(run, x, false);
        case IPNDM_V_SAMPLE_METHOD:
            return sample_ipndm_impl(run, x, true);
        case LCM_SAMPLE_METHOD:
            return sample_lcm(run, x);
        case TCD_SAMPLE_METHOD:
            return sample_tcd(run, x);
        case RES_MULTISTEP_SAMPLE_METHOD:
            return sample_res_multistep(run, x);
        case RES_2S_SAMPLE_METHOD:
            return sample_res_2s(run, x);
        case ER_SDE_SAMPLE_METHOD:
            return sample_er_sde(run, x);
        case EULER_CFG_PP_SAMPLE_METHOD:
            return sample_euler_cfg_pp(run, x);
        case EULER_A_CFG_PP_SAMPLE_METHOD:
            return sample_euler_ancestral_cfg_pp(run, x);
        case EULER_GE_SAMPLE_METHOD:
            return sample_gradient_estimation(run, x);
        case DPMPP2M_SDE_SAMPLE_METHOD:
            return sample_dpmpp_2m_sde(run, x);
        case DPMPP2M_SDE_BT_SAMPLE_METHOD:
            return sample_dpmpp_2m_sde_bt(run, x);
        case LMS_SAMPLE_METHOD:
            return sample_lms(run, x);
        default:
            fail("unknown sampling method %d", static_cast<int>(method));
    }
}

}  // namespace sd
