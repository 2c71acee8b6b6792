// Samplers on toy denoisers whose steps are written out here in double precision from the
// k-diffusion / ComfyUI / paper formulas, plus convergence to the exact ODE solution.
//
// Toy model: data x0 ~ N(0, 1), so the exact denoiser is E[x0 | x] = x / (1 + sigma^2) and the
// probability-flow ODE from sigma_max has the solution x(sigma) = x_T sqrt((1 + sigma^2) /
// (1 + sigma_max^2)). For flow models (x = (1 - s) x0 + s eps) the exact denoiser is
// x (1 - s) / ((1 - s)^2 + s^2).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "sampling/samplers.h"
#include "sampling/schedule.h"
#include "sampling/schedulers.h"

namespace sd {
namespace {

using Vec = std::vector<double>;

const Vec kStart = {1.5, -0.7, 0.2};

double toy(double x, double s) {
    return x / (1 + s * s);
}

double toy_flow(double x, double s) {
    return x * (1 - s) / ((1 - s) * (1 - s) + s * s);
}

double uncond_toy(double x, double s) {
    return 0.5 * x / (1 + s * s);
}

Tensor tensor_of(const Vec& v) {
    std::vector<float> f(v.begin(), v.end());
    return Tensor::from_vector({static_cast<int64_t>(v.size())}, f);
}

// A noise source whose values are recorded, so the expected steps can use them.
class ScriptedRng final : public Rng {
  public:
    void manual_seed(uint64_t) override {}
    std::vector<float> randn(size_t n) override {
        std::vector<float> v(n);
        for (float& x : v) {
            x = std::sin(0.7f * static_cast<float>(counter_++) + 0.3f) * 1.3f;
            drawn.push_back(x);
        }
        ++calls;
        return v;
    }
    std::unique_ptr<Rng> clone() const override { return std::make_unique<ScriptedRng>(*this); }

    std::vector<float> drawn;
    int calls = 0;

  private:
    int counter_ = 0;
};

// The toy model as a sampler callback, recording its calls.
struct Toy {
    bool flow = false;
    std::vector<DenoiseCall> calls;

    DenoiseFn fn() {
        return [this](const Tensor& x, const DenoiseCall& call) {
            calls.push_back(call);
            std::vector<float> v = x.to_vector(), p(v.size()), u(v.size());
            for (size_t i = 0; i < v.size(); ++i) {
                p[i] =
                    static_cast<float>(flow ? toy_flow(v[i], call.sigma) : toy(v[i], call.sigma));
                u[i] = static_cast<float>(uncond_toy(v[i], call.sigma));
            }
            Denoised d;
            d.pred = Tensor::from_vector(x.shape(), p);
            if (call.need_uncond) d.pred_uncond = Tensor::from_vector(x.shape(), u);
            return d;
        };
    }
};

struct Result {
    Vec x;
    std::vector<DenoiseCall> calls;
    std::vector<float> noise;
};

Result run(SampleMethod m, const std::vector<float>& sigmas, SamplerOptions opt = {},
           Vec start = kStart) {
    Toy toy_model;
    toy_model.flow = opt.is_flow;
    ScriptedRng rng;
    Tensor out = sample(m, toy_model.fn(), tensor_of(start), sigmas, rng, opt);
    std::vector<float> o = out.to_vector();
    return {Vec(o.begin(), o.end()), toy_model.calls, rng.drawn};
}

void expect_vec(const Vec& got, const Vec& want, double rtol, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], rtol * std::fabs(want[i]) + 2e-6) << what << " element " << i;
    }
}

SamplerOptions with_eta(float eta, bool flow = false) {
    SamplerOptions o;
    o.eta = eta;
    o.is_flow = flow;
    return o;
}

// k-diffusion get_ancestral_step.
std::pair<double, double> ancestral(double s, double sn, double eta) {
    if (eta == 0) return {sn, 0.0};
    const double up = std::min(sn, eta * std::sqrt(sn * sn * (s * s - sn * sn) / (s * s)));
    return {std::sqrt(sn * sn - up * up), up};
}

const std::vector<float> kSig = {5.0f, 2.0f, 0.7f, 0.0f};

TEST(Samplers, Euler) {
    Result r = run(EULER_SAMPLE_METHOD, kSig);
    Vec want = kStart;
    for (double& x : want) {
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double d = (x - toy(x, kSig[i])) / kSig[i];  // to_d
            x = x + d * (kSig[i + 1] - kSig[i]);
        }
    }
    expect_vec(r.x, want, 1e-5, "euler");
    ASSERT_EQ(r.calls.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(r.calls[i].sigma, kSig[i]);
        EXPECT_EQ(r.calls[i].step, i + 1);
        EXPECT_FALSE(r.calls[i].need_uncond);
    }
    EXPECT_TRUE(r.noise.empty());
}

TEST(Samplers, EulerAncestral) {
    for (float eta : {1.0f, 0.5f, 0.0f}) {
        Result r = run(EULER_A_SAMPLE_METHOD, kSig, with_eta(eta));
        Vec want = kStart;
        size_t k = 0;
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            auto [down, up] = ancestral(kSig[i], kSig[i + 1], eta);
            for (size_t j = 0; j < want.size(); ++j) {
                const double d = (want[j] - toy(want[j], kSig[i])) / kSig[i];
                want[j] += d * (down - kSig[i]);
            }
            if (kSig[i + 1] > 0 && up > 0) {
                for (double& x : want) x += r.noise[k++] * up;
            }
        }
        EXPECT_EQ(k, r.noise.size());
        expect_vec(r.x, want, 2e-5, "euler_a");
    }
    // The default eta of euler_a is 1: two noise draws for three steps.
    Result def = run(EULER_A_SAMPLE_METHOD, kSig);
    EXPECT_EQ(def.noise.size(), 6u);
}

TEST(Samplers, EulerAncestralRectifiedFlow) {
    // ComfyUI sample_euler_ancestral_RF.
    const std::vector<float> sig = {1.0f, 0.75f, 0.4f, 0.0f};
    for (float eta : {1.0f, 0.6f}) {
        Result r = run(EULER_A_SAMPLE_METHOD, sig, with_eta(eta, true));
        Vec want = kStart;
        size_t k = 0;
        for (size_t i = 0; i + 1 < sig.size(); ++i) {
            const double s = sig[i], sn = sig[i + 1];
            if (sn == 0) {
                for (double& x : want) x = toy_flow(x, s);
                continue;
            }
            const double down = sn * (1 + (sn / s - 1) * eta);
            const double alpha_n = 1 - sn, alpha_down = 1 - down;
            const double renoise =
                std::sqrt(sn * sn - down * down * alpha_n * alpha_n / (alpha_down * alpha_down));
            const double ratio = down / s;
            for (double& x : want) x = ratio * x + (1 - ratio) * toy_flow(x, s);
            for (double& x : want) x = (alpha_n / alpha_down) * x + r.noise[k++] * renoise;
        }
        expect_vec(r.x, want, 2e-5, "euler_a flow");
    }
}

TEST(Samplers, EulerHeunDpmPlusPlus2MOnRectifiedFlow) {
    // FLUX's default schedule at 256x256 (flux scheduler, 1024 latent pixels): the same k-diffusion
    // steps as on eps models, with the flow denoiser, and no noise drawn.
    const std::vector<float> sig = flux_sigmas(4, 1024);
    SamplerOptions flow;
    flow.is_flow = true;
    Vec euler = kStart, heun = kStart, dpm = kStart;
    for (size_t j = 0; j < kStart.size(); ++j) {
        double old = 0;
        for (size_t i = 0; i + 1 < sig.size(); ++i) {
            const double s = sig[i], sn = sig[i + 1];
            euler[j] += (euler[j] - toy_flow(euler[j], s)) / s * (sn - s);
            const double d = (heun[j] - toy_flow(heun[j], s)) / s;
            if (sn == 0) {
                heun[j] += d * (sn - s);
            } else {
                const double x2 = heun[j] + d * (sn - s);
                heun[j] += (d + (x2 - toy_flow(x2, sn)) / sn) / 2 * (sn - s);
            }
            const double den = toy_flow(dpm[j], s);
            const double h = std::log(s) - std::log(sn);
            if (i == 0 || sn == 0) {
                dpm[j] = (sn / s) * dpm[j] - std::expm1(-h) * den;
            } else {
                const double rr = (std::log(sig[i - 1]) - std::log(s)) / h;
                dpm[j] = (sn / s) * dpm[j] -
                         std::expm1(-h) * ((1 + 1 / (2 * rr)) * den - (1 / (2 * rr)) * old);
            }
            old = den;
        }
    }
    const Result e = run(EULER_SAMPLE_METHOD, sig, flow);
    expect_vec(e.x, euler, 2e-5, "euler flow");
    EXPECT_TRUE(e.noise.empty());
    expect_vec(run(HEUN_SAMPLE_METHOD, sig, flow).x, heun, 2e-5, "heun flow");
    expect_vec(run(DPMPP2M_SAMPLE_METHOD, sig, flow).x, dpm, 2e-5, "dpm++2m flow");
}

TEST(Samplers, Heun) {
    Result r = run(HEUN_SAMPLE_METHOD, kSig);
    Vec want = kStart;
    for (double& x : want) {
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            const double d = (x - toy(x, s)) / s;
            if (sn == 0) {
                x = x + d * (sn - s);
            } else {
                const double x2 = x + d * (sn - s);
                const double d2 = (x2 - toy(x2, sn)) / sn;
                x = x + (d + d2) / 2 * (sn - s);
            }
        }
    }
    expect_vec(r.x, want, 1e-5, "heun");
    // Two calls per step except the last; the first of a pair is numbered negative.
    ASSERT_EQ(r.calls.size(), 5u);
    EXPECT_EQ(r.calls[0].step, -1);
    EXPECT_EQ(r.calls[1].step, 1);
    EXPECT_EQ(r.calls[1].sigma, 2.0f);
    EXPECT_EQ(r.calls[4].step, -3);
}

TEST(Samplers, Dpm2) {
    Result r = run(DPM2_SAMPLE_METHOD, kSig);
    Vec want = kStart;
    for (double& x : want) {
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            const double d = (x - toy(x, s)) / s;
            if (sn == 0) {
                x = x + d * (sn - s);
            } else {
                const double mid = std::sqrt(s * sn);  // log-space midpoint
                const double x2 = x + d * (mid - s);
                x = x + (x2 - toy(x2, mid)) / mid * (sn - s);
            }
        }
    }
    expect_vec(r.x, want, 1e-5, "dpm2");
    EXPECT_NEAR(r.calls[1].sigma, std::sqrt(10.0), 1e-5);
}

TEST(Samplers, DpmPlusPlus2SAncestral) {
    for (float eta : {1.0f, 0.0f}) {
        Result r = run(DPMPP2S_A_SAMPLE_METHOD, kSig, with_eta(eta));
        Vec want = kStart;
        size_t k = 0;
        std::vector<double> mids;
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            auto [down, up] = ancestral(s, sn, eta);
            if (down == 0) {
                for (double& x : want) x = toy(x, s);
            } else {
                const double t = -std::log(s), t_next = -std::log(down), h = t_next - t;
                const double sigma_s = std::exp(-(t + 0.5 * h));
                mids.push_back(sigma_s);
                for (double& x : want) {
                    const double x2 = (sigma_s / s) * x - std::expm1(-0.5 * h) * toy(x, s);
                    x = (down / s) * x - std::expm1(-h) * toy(x2, sigma_s);
                }
            }
            if (sn > 0) {
                for (double& x : want) x += r.noise[k++] * up;
            }
        }
        expect_vec(r.x, want, 2e-5, "dpm++2s_a");
        EXPECT_NEAR(r.calls[1].sigma, mids[0], 1e-5 * mids[0]);
    }
}

TEST(Samplers, DpmPlusPlus2SAncestralRectifiedFlow) {
    // ComfyUI sample_dpmpp_2s_ancestral_RF (midpoint in lambda = log((1 - s) / s)).
    const std::vector<float> sig = {0.9f, 0.6f, 0.3f, 0.0f};
    Result r = run(DPMPP2S_A_SAMPLE_METHOD, sig, with_eta(1.0f, true));
    auto lambda_fn = [](double s) { return std::log((1 - s) / s); };
    Vec want = kStart;
    size_t k = 0;
    for (size_t i = 0; i + 1 < sig.size(); ++i) {
        const double s = sig[i], sn = sig[i + 1];
        if (sn == 0) {
            for (double& x : want) x = toy_flow(x, s);
            continue;
        }
        const double down = sn * (1 + (sn / s - 1) * 1.0);
        const double alpha_n = 1 - sn, alpha_down = 1 - down;
        const double renoise =
            std::sqrt(sn * sn - down * down * alpha_n * alpha_n / (alpha_down * alpha_down));
        const double mid = 1 / (std::exp(0.5 * (lambda_fn(s) + lambda_fn(down))) + 1);
        for (double& x : want) {
            const double u = (mid / s) * x + (1 - mid / s) * toy_flow(x, s);
            x = (down / s) * x + (1 - down / s) * toy_flow(u, mid);
        }
        for (double& x : want) x = (alpha_n / alpha_down) * x + r.noise[k++] * renoise;
    }
    expect_vec(r.x, want, 3e-5, "dpm++2s_a flow");
}

TEST(Samplers, DpmPlusPlus2M) {
    Result r = run(DPMPP2M_SAMPLE_METHOD, kSig);
    Vec want = kStart;
    for (double& x : want) {
        double old = 0;
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            const double den = toy(x, s);
            const double t = -std::log(s), t_next = -std::log(sn), h = t_next - t;
            if (i == 0 || sn == 0) {
                x = (sn / s) * x - std::expm1(-h) * den;
            } else {
                const double h_last = t + std::log(kSig[i - 1]);
                const double rr = h_last / h;
                const double den_d = (1 + 1 / (2 * rr)) * den - (1 / (2 * rr)) * old;
                x = (sn / s) * x - std::expm1(-h) * den_d;
            }
            old = den;
        }
    }
    expect_vec(r.x, want, 2e-5, "dpm++2m");
}

TEST(Samplers, DpmPlusPlus2MV2) {
    const std::vector<float> sig = {6.0f, 3.0f, 1.1f, 0.4f, 0.0f};
    Result r = run(DPMPP2Mv2_SAMPLE_METHOD, sig);
    Vec want = kStart;
    for (double& x : want) {
        double old = 0;
        for (size_t i = 0; i + 1 < sig.size(); ++i) {
            const double s = sig[i], sn = sig[i + 1];
            const double den = toy(x, s);
            const double t = -std::log(s), t_next = -std::log(sn), h = t_next - t;
            if (i == 0 || sn == 0) {
                x = (sn / s) * x - std::expm1(-h) * den;
            } else {
                const double h_last = t + std::log(sig[i - 1]);
                const double h_min = std::min(h_last, h), h_max = std::max(h_last, h);
                const double rr = h_max / h_min, h_d = (h_max + h_min) / 2;
                const double den_d = (1 + 1 / (2 * rr)) * den - (1 / (2 * rr)) * old;
                x = (sn / s) * x - std::expm1(-h_d) * den_d;
            }
            old = den;
        }
    }
    expect_vec(r.x, want, 2e-5, "dpm++2mv2");
}

// Adams-Bashforth steps on d up to order 4; variable: order 2 with the step-size ratio.
Vec ref_ipndm(const std::vector<float>& sig, bool variable) {
    Vec want = kStart;
    for (double& x : want) {
        std::vector<double> hist;
        for (size_t i = 0; i + 1 < sig.size(); ++i) {
            const double s = sig[i], h = sig[i + 1] - s;
            const double d = (x - toy(x, s)) / s;
            const size_t n = hist.size();
            const int order = std::min<int>(4, static_cast<int>(i) + 1);
            if (order == 1) {
                x += h * d;
            } else if (order == 2 && variable) {
                const double q = h / (s - sig[i - 1]);
                x += h * ((2 + q) * d - q * hist[n - 1]) / 2;
            } else if (order == 2) {
                x += h * (3 * d - hist[n - 1]) / 2;
            } else if (order == 3) {
                x += h * (23 * d - 16 * hist[n - 1] + 5 * hist[n - 2]) / 12;
            } else {
                x += h * (55 * d - 59 * hist[n - 1] + 37 * hist[n - 2] - 9 * hist[n - 3]) / 24;
            }
            hist.push_back(d);
        }
    }
    return want;
}

TEST(Samplers, Ipndm) {
    const std::vector<float> sig = {8.0f, 5.0f, 3.0f, 1.8f, 0.9f, 0.3f, 0.0f};
    expect_vec(run(IPNDM_SAMPLE_METHOD, sig).x, ref_ipndm(sig, false), 2e-5, "ipndm");
    expect_vec(run(IPNDM_V_SAMPLE_METHOD, sig).x, ref_ipndm(sig, true), 2e-5, "ipndm_v");
}

TEST(Samplers, Lcm) {
    Result r = run(LCM_SAMPLE_METHOD, kSig);
    Vec want = kStart;
    size_t k = 0;
    for (size_t i = 0; i + 1 < kSig.size(); ++i) {
        for (double& x : want) x = toy(x, kSig[i]);
        if (kSig[i + 1] > 0) {
            for (double& x : want) x += kSig[i + 1] * r.noise[k++];
        }
    }
    expect_vec(r.x, want, 1e-5, "lcm");
    const std::vector<float> fs = {1.0f, 0.6f, 0.0f};
    Result f = run(LCM_SAMPLE_METHOD, fs, with_eta(INFINITY, true));
    Vec wf = kStart;
    for (size_t j = 0; j < wf.size(); ++j) {
        const double x0 = toy_flow(wf[j], 1.0);
        wf[j] = toy_flow((1 - 0.6) * x0 + 0.6 * f.noise[j], 0.6);
    }
    expect_vec(f.x, wf, 1e-5, "lcm flow");
}

TEST(Samplers, DdimTrailingIsDdimInVpSpace) {
    // DDIM (Song et al. eq. 12) with alpha_bar = 1 / (1 + sigma^2), in k-diffusion's scale
    // x = x_vp / sqrt(alpha_bar): with eta it renoises with sigma_t(eta) (eq. 16).
    for (float eta : {0.0f, 0.5f}) {
        Result r = run(DDIM_TRAILING_SAMPLE_METHOD, kSig, with_eta(eta));
        Vec want = kStart;
        size_t k = 0;
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            const double a = 1 / (1 + s * s), a_prev = 1 / (1 + sn * sn);
            const double std_t = eta * std::sqrt((1 - a_prev) / (1 - a) * (1 - a / a_prev));
            for (double& x : want) {
                const double x_vp = x * std::sqrt(a);
                const double x0 = toy(x, s);
                const double eps = (x_vp - std::sqrt(a) * x0) / std::sqrt(1 - a);
                double prev = std::sqrt(a_prev) * x0 + std::sqrt(1 - a_prev - std_t * std_t) * eps;
                if (sn > 0 && std_t > 0) prev += std_t * r.noise[k++];
                x = prev / std::sqrt(a_prev);
            }
        }
        expect_vec(r.x, want, 3e-5, "ddim_trailing");
    }
    EXPECT_EQ(run(DDIM_TRAILING_SAMPLE_METHOD, kSig).noise.size(), 0u);  // default eta 0
}

TEST(Samplers, TcdStrategicStochasticSampling) {
    // Zheng et al. 2024 algorithm 4 in VP space on the SD schedule's alpha_bar table.
    std::vector<double> ac(1000), table(1000);
    double prod = 1;
    for (int i = 0; i < 1000; ++i) {
        const double sb = std::sqrt(0.00085) + (std::sqrt(0.012) - std::sqrt(0.00085)) * i / 999.0;
        prod *= 1 - sb * sb;
        ac[i] = prod;
        table[i] = std::sqrt((1 - prod) / prod);
    }
    auto nearest = [&](double s) {
        int best = 0;
        for (int i = 1; i < 1000; ++i)
            best = std::fabs(table[i] - s) < std::fabs(table[best] - s) ? i : best;
        return best;
    };
    const DdpmSchedule sched;
    const std::vector<float> sig = lcm_sigmas(4, sched);
    for (float eta : {0.3f, 0.0f}) {
        Result r = run(TCD_SAMPLE_METHOD, sig, with_eta(eta));
        Vec want = kStart;
        size_t k = 0;
        for (size_t i = 0; i + 1 < sig.size(); ++i) {
            const double s = sig[i], sn = sig[i + 1];
            const int t_prev = nearest(sn);
            const int t_s = static_cast<int>(std::floor((1 - eta) * t_prev));
            const double a_s = ac[t_s], a_prev = 1 / (1 + sn * sn);
            for (double& x : want) {
                const double x0 = toy(x, s);
                const double eps = (x - x0) / s;
                double x_vp = std::sqrt(a_s) * x0 + std::sqrt(1 - a_s) * eps;  // x_s
                if (eta > 0 && sn > 0) {
                    x_vp =
                        std::sqrt(a_prev / a_s) * x_vp + std::sqrt(1 - a_prev / a_s) * r.noise[k++];
                }
                x = x_vp / std::sqrt(a_prev);
            }
        }
        EXPECT_EQ(k, r.noise.size());
        expect_vec(r.x, want, 5e-5, "tcd");
    }
}

double phi1(double t) {
    return std::expm1(t) / t;
}
double phi2(double t) {
    return (phi1(t) - 1) / t;
}

TEST(Samplers, ResMultistep) {
    Result r = run(RES_MULTISTEP_SAMPLE_METHOD, kSig);  // default eta 0
    Vec want = kStart;
    for (double& x : want) {
        double old = 0;
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            const double den = toy(x, s);
            if (i == 0 || sn == 0) {
                x = x + (x - den) / s * (sn - s);
            } else {
                const double t = -std::log(s), t_next = -std::log(sn),
                             t_prev = -std::log(kSig[i - 1]);
                const double h = t_next - t, c2 = (t_prev - t) / h;  // old sigma_down = sigma_i
                const double b1 = phi1(-h) - phi2(-h) / c2, b2 = phi2(-h) / c2;
                x = std::exp(-h) * x + h * (b1 * den + b2 * old);
            }
            old = den;
        }
    }
    expect_vec(r.x, want, 2e-5, "res_multistep");
}

TEST(Samplers, Res2s) {
    Result r = run(RES_2S_SAMPLE_METHOD, kSig);
    Vec want = kStart;
    for (double& x : want) {
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            const double den = toy(x, s);
            if (sn == 0) {
                x = den;
                continue;
            }
            const double t = -std::log(s), h = -std::log(sn) - t;
            const double a21 = 0.5 * phi1(-0.5 * h), b2 = phi2(-h) / 0.5, b1 = phi1(-h) - b2;
            const double mid = std::exp(-(t + 0.5 * h));
            const double x2 = x + h * a21 * (den - x);
            x = x + h * (b1 * (den - x) + b2 * (toy(x2, mid) - x));
        }
    }
    expect_vec(r.x, want, 2e-5, "res_2s");
    EXPECT_NEAR(r.calls[1].sigma, std::sqrt(10.0), 1e-5);
}

TEST(Samplers, ErSde) {
    // Cui et al. 2023 ER-SDE-Solver-3 as ComfyUI sample_er_sde (200-point sums), eta = 1.
    const std::vector<float> sig = {6.0f, 3.0f, 1.2f, 0.5f, 0.0f};
    Result r = run(ER_SDE_SAMPLE_METHOD, sig);
    auto scaler = [](double v) { return v * (std::exp(std::pow(v, 0.3)) + 10.0); };
    Vec want = kStart;
    const size_t n = want.size();
    std::vector<Vec> old_den, old_den_d;
    size_t k = 0;
    for (size_t i = 0; i + 1 < sig.size(); ++i) {
        const double ls = sig[i], lt = sig[i + 1];
        Vec den(n);
        for (size_t j = 0; j < n; ++j) den[j] = toy(want[j], ls);
        if (lt == 0) {
            want = den;
            break;
        }
        const double rr = scaler(lt) / scaler(ls);
        for (size_t j = 0; j < n; ++j) want[j] = rr * want[j] + (1 - rr) * den[j];
        if (!old_den.empty()) {
            const double dt = lt - ls, step = -dt / 200;
            double s = 0, s_u = 0;
            for (int p = 0; p < 200; ++p) {
                const double lp = lt + p * step;
                s += 1 / scaler(lp);
                s_u += (lp - ls) / scaler(lp);
            }
            s *= step;
            s_u *= step;
            Vec dd(n);
            for (size_t j = 0; j < n; ++j) {
                dd[j] = (den[j] - old_den.back()[j]) / (ls - sig[i - 1]);
                want[j] += (dt + s * scaler(lt)) * dd[j];
            }
            if (!old_den_d.empty()) {
                for (size_t j = 0; j < n; ++j) {
                    const double du = (dd[j] - old_den_d.back()[j]) / ((ls - sig[i - 2]) / 2);
                    want[j] += (dt * dt / 2 + s_u * scaler(lt)) * du;
                }
            }
            old_den_d.push_back(dd);
        }
        const double noise_scale = std::sqrt(lt * lt - ls * ls * rr * rr);
        for (size_t j = 0; j < n; ++j) want[j] += r.noise[k++] * noise_scale;
        old_den.push_back(den);
    }
    EXPECT_EQ(k, r.noise.size());
    expect_vec(r.x, want, 5e-5, "er_sde");
}

TEST(Samplers, EulerCfgPlusPlus) {
    EXPECT_TRUE(needs_uncond(EULER_CFG_PP_SAMPLE_METHOD));
    EXPECT_TRUE(needs_uncond(EULER_A_CFG_PP_SAMPLE_METHOD));
    EXPECT_FALSE(needs_uncond(EULER_SAMPLE_METHOD));
    Result r = run(EULER_CFG_PP_SAMPLE_METHOD, kSig);
    Vec want = kStart;
    for (double& x : want) {
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            // x_next = x0_guided + sigma_next * (x - x0_uncond) / sigma
            x = toy(x, kSig[i]) + kSig[i + 1] * (x - uncond_toy(x, kSig[i])) / kSig[i];
        }
    }
    expect_vec(r.x, want, 1e-5, "euler_cfg_pp");
    for (const DenoiseCall& c : r.calls) EXPECT_TRUE(c.need_uncond);

    Result a = run(EULER_A_CFG_PP_SAMPLE_METHOD, kSig);
    Vec wa = kStart;
    size_t k = 0;
    for (size_t i = 0; i + 1 < kSig.size(); ++i) {
        auto [down, up] = ancestral(kSig[i], kSig[i + 1], 1.0);
        for (double& x : wa) x = toy(x, kSig[i]) + down * (x - uncond_toy(x, kSig[i])) / kSig[i];
        if (kSig[i + 1] > 0) {
            for (double& x : wa) x += a.noise[k++] * up;
        }
    }
    expect_vec(a.x, wa, 2e-5, "euler_a_cfg_pp");
}

TEST(Samplers, EulerGradientEstimation) {
    Result r = run(EULER_GE_SAMPLE_METHOD, kSig);  // eta 0, gamma 2
    Vec want = kStart;
    for (double& x : want) {
        double old_d = 0;
        for (size_t i = 0; i + 1 < kSig.size(); ++i) {
            const double s = kSig[i], sn = kSig[i + 1];
            if (sn == 0) {
                x = toy(x, s);
                break;
            }
            const double d = (x - toy(x, s)) / s;
            x += (i == 0 ? d : 2 * d - old_d) * (sn - s);
            old_d = d;
        }
    }
    expect_vec(r.x, want, 2e-5, "euler_ge");
}

TEST(Samplers, DeterministicSamplersConvergeToTheOdeSolution) {
    // Karras sigmas from 14.6 to 0.03, then 0: x(0) = x_T / sqrt(1 + sigma_max^2).
    const int steps = 80;
    const std::vector<float> sig = karras_sigmas(steps, 0.0292f, 14.6f);
    const double smax = sig[0];
    Vec start = {1.5 * std::sqrt(1 + smax * smax), -0.7 * std::sqrt(1 + smax * smax),
                 0.2 * std::sqrt(1 + smax * smax)};
    // The last jump from 0.0292 to 0 costs 4e-4. First-order methods err ~1/steps; so do
    // dpm++2mv2 (its averaged h breaks consistency on uneven steps) and euler_ge (gamma 2).
    const struct {
        SampleMethod m;
        double tol;
    } cases[] = {{EULER_SAMPLE_METHOD, 3e-2},     {HEUN_SAMPLE_METHOD, 1e-3},
                 {DPM2_SAMPLE_METHOD, 1e-3},      {DPMPP2M_SAMPLE_METHOD, 1e-3},
                 {DPMPP2Mv2_SAMPLE_METHOD, 3e-2}, {IPNDM_SAMPLE_METHOD, 1e-3},
                 {IPNDM_V_SAMPLE_METHOD, 1e-3},   {RES_MULTISTEP_SAMPLE_METHOD, 1e-3},
                 {RES_2S_SAMPLE_METHOD, 1e-3},    {DDIM_TRAILING_SAMPLE_METHOD, 3e-2},
                 {EULER_GE_SAMPLE_METHOD, 3e-2}};
    for (const auto& c : cases) {
        SCOPED_TRACE(static_cast<int>(c.m));
        Result r = run(c.m, sig, {}, start);
        expect_vec(r.x, kStart, c.tol, "converged");
    }
    Result a = run(DPMPP2S_A_SAMPLE_METHOD, sig, with_eta(0.0f), start);
    expect_vec(a.x, kStart, 1e-3, "dpm++2s_a eta 0");
}

TEST(Samplers, StepHookReportsAndCancels) {
    Toy toy_model;
    ScriptedRng rng;
    std::vector<int> seen;
    SamplerOptions opt;
    opt.on_step = [&](const StepInfo& info) {
        seen.push_back(info.step);
        EXPECT_EQ(info.steps, 3);
        EXPECT_EQ(info.sigma, kSig[info.step - 1]);
        EXPECT_EQ(info.x.shape(), Shape({3}));
        EXPECT_EQ(info.denoised.shape(), Shape({3}));
        return true;
    };
    sample(DPMPP2M_SAMPLE_METHOD, toy_model.fn(), tensor_of(kStart), kSig, rng, opt);
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));

    opt.on_step = [&](const StepInfo& info) { return info.step < 2; };
    toy_model.calls.clear();
    EXPECT_THROW(sample(HEUN_SAMPLE_METHOD, toy_model.fn(), tensor_of(kStart), kSig, rng, opt),
                 Cancelled);
    EXPECT_EQ(toy_model.calls.size(), 4u);  // stopped after step 2
}

TEST(Samplers, EveryMethodRunsOnLatentShapes) {
    const std::vector<float> sig = karras_sigmas(6, 0.03f, 14.6f);
    Tensor x = Tensor::full({2, 3, 4}, 0.5f);
    for (int m = 0; m < SAMPLE_METHOD_COUNT; ++m) {
        for (bool flow : {false, true}) {
            SCOPED_TRACE(m);
            Toy toy_model;
            toy_model.flow = flow;
            ScriptedRng rng;
            SamplerOptions opt;
            opt.is_flow = flow;
            std::vector<float> s = sig;
            if (flow) s = {1.0f, 0.8f, 0.5f, 0.2f, 0.0f};
            Tensor out = sample(static_cast<SampleMethod>(m), toy_model.fn(), x, s, rng, opt);
            EXPECT_EQ(out.shape(), x.shape());
            for (float v : out.to_vector()) EXPECT_TRUE(std::isfinite(v));
            EXPECT_EQ(x.to_vector()[0], 0.5f);  // the input is not modified
        }
    }
}

TEST(Samplers, EtaDefaultsAndBadInput) {
    EXPECT_EQ(default_eta(EULER_A_SAMPLE_METHOD), 1.0f);
    EXPECT_EQ(default_eta(DPMPP2S_A_SAMPLE_METHOD), 1.0f);
    EXPECT_EQ(default_eta(ER_SDE_SAMPLE_METHOD), 1.0f);
    EXPECT_EQ(default_eta(EULER_A_CFG_PP_SAMPLE_METHOD), 1.0f);
    EXPECT_EQ(default_eta(DDIM_TRAILING_SAMPLE_METHOD), 0.0f);
    EXPECT_EQ(default_eta(TCD_SAMPLE_METHOD), 0.0f);
    EXPECT_EQ(resolve_eta(EULER_A_SAMPLE_METHOD, INFINITY), 1.0f);
    EXPECT_EQ(resolve_eta(EULER_A_SAMPLE_METHOD, 0.25f), 0.25f);
    EXPECT_THROW(resolve_eta(EULER_A_SAMPLE_METHOD, -0.1f), Error);
    EXPECT_THROW(resolve_eta(EULER_A_SAMPLE_METHOD, std::nanf("")), Error);

    Toy toy_model;
    ScriptedRng rng;
    Tensor x = tensor_of(kStart);
    auto bad = [&](SampleMethod m, const std::vector<float>& s, SamplerOptions o = {}) {
        EXPECT_THROW(sample(m, toy_model.fn(), x, s, rng, o), Error);
    };
    bad(SAMPLE_METHOD_COUNT, kSig);
    bad(static_cast<SampleMethod>(-1), kSig);
    bad(EULER_SAMPLE_METHOD, {5.0f});
    bad(EULER_SAMPLE_METHOD, {});
    bad(EULER_SAMPLE_METHOD, {1.0f, 2.0f, 0.0f});           // increasing
    bad(EULER_SAMPLE_METHOD, {2.0f, -1.0f});                // negative
    bad(EULER_SAMPLE_METHOD, {2.0f, std::nanf(""), 0.0f});  // not finite
    bad(EULER_SAMPLE_METHOD, {2.0f, 0.0f, 0.0f});           // zero before the last
    bad(EULER_A_SAMPLE_METHOD, kSig, with_eta(-1.0f));
    EXPECT_THROW(sample(EULER_SAMPLE_METHOD, nullptr, x, kSig, rng), Error);
    EXPECT_THROW(sample(EULER_SAMPLE_METHOD, toy_model.fn(), Tensor(), kSig, rng), Error);

    // A callback answering with the wrong shape or without the unconditional prediction.
    DenoiseFn wrong = [](const Tensor&, const DenoiseCall&) {
        return Denoised{Tensor::zeros({4}), Tensor()};
    };
    EXPECT_THROW(sample(EULER_SAMPLE_METHOD, wrong, x, kSig, rng), Error);
    DenoiseFn no_uncond = [](const Tensor& in, const DenoiseCall&) {
        return Denoised{in, Tensor()};
    };
    EXPECT_THROW(sample(EULER_CFG_PP_SAMPLE_METHOD, no_uncond, x, kSig, rng), Error);
    DenoiseFn empty = [](const Tensor&, const DenoiseCall&) { return Denoised{}; };
    EXPECT_THROW(sample(EULER_SAMPLE_METHOD, empty, x, kSig, rng), Error);
}

TEST(Samplers, CustomSigmas) {
    const float ok[] = {14.0f, 5.0f, 1.0f, 0.0f};
    EXPECT_EQ(custom_sigmas(ok, 4), std::vector<float>(ok, ok + 4));
    const float partial[] = {3.0f, 1.0f, 0.2f};  // hires / img2img tails may end above 0
    EXPECT_EQ(custom_sigmas(partial, 3).size(), 3u);
    const float flat[] = {3.0f, 3.0f, 0.0f};
    const float up[] = {1.0f, 3.0f, 0.0f};
    const float neg[] = {3.0f, 1.0f, -0.5f};
    const float inf[] = {INFINITY, 1.0f, 0.0f};
    EXPECT_THROW(custom_sigmas(flat, 3), Error);
    EXPECT_THROW(custom_sigmas(up, 3), Error);
    EXPECT_THROW(custom_sigmas(neg, 3), Error);
    EXPECT_THROW(custom_sigmas(inf, 3), Error);
    EXPECT_THROW(custom_sigmas(ok, 1), Error);
    EXPECT_THROW(custom_sigmas(nullptr, 4), Error);
    EXPECT_THROW(custom_sigmas(ok, -2), Error);
}

}  // namespace
}  // namespace sd
