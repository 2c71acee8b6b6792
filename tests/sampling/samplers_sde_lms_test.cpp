// dpm++2m_sde, dpm++2m_sde_bt and lms on the toy model of samplers_test.cpp, against their
// steps written out here in double precision: k-diffusion's sample_dpmpp_2m_sde (midpoint) and
// sample_lms, whose coefficients are integrated here numerically (composite Simpson), as
// k-diffusion integrates them with scipy's quad.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "sampling/brownian_tree.h"
#include "sampling/samplers.h"
#include "sampling/schedulers.h"

namespace sd {
namespace {

using Vec = std::vector<double>;

const Vec kStart = {1.5, -0.7, 0.2};
const std::vector<float> kSig = {5.0f, 2.0f, 0.7f, 0.3f, 0.0f};

double toy(double x, double s) {  // E[x0 | x] for x0 ~ N(0, 1)
    return x / (1 + s * s);
}

double toy_flow(double x, double s) {
    return x * (1 - s) / ((1 - s) * (1 - s) + s * s);
}

// Noise whose values are recorded, for the expected steps.
class ScriptedRng final : public Rng {
  public:
    void manual_seed(uint64_t) override {}
    std::unique_ptr<Rng> clone() const override { return std::make_unique<ScriptedRng>(*this); }
    std::vector<float> randn(size_t n) override {
        std::vector<float> v;
        while (v.size() < n)
            v.push_back(std::sin(0.9f * static_cast<float>(drawn.size() + v.size()) + 0.1f));
        drawn.insert(drawn.end(), v.begin(), v.end());
        return v;
    }
    std::vector<float> drawn;
};

struct Result {
    Vec x;
    std::vector<float> noise;
    std::vector<float> call_sigmas;
};

Result run(SampleMethod m, const std::vector<float>& sigmas, SamplerOptions opt = {}) {
    ScriptedRng rng;
    std::vector<float> calls;
    const bool flow = opt.is_flow;
    DenoiseFn fn = [&](const Tensor& x, const DenoiseCall& call) {
        calls.push_back(call.sigma);
        std::vector<float> v = x.to_vector();
        for (float& e : v)
            e = static_cast<float>(flow ? toy_flow(e, call.sigma) : toy(e, call.sigma));
        return Denoised{Tensor::from_vector(x.shape(), v), Tensor()};
    };
    std::vector<float> start(kStart.begin(), kStart.end());
    Tensor out = sample(m, fn, Tensor::from_vector({3}, start), sigmas, rng, opt);
    std::vector<float> o = out.to_vector();
    return {Vec(o.begin(), o.end()), rng.drawn, calls};
}

void expect_vec(const Vec& got, const Vec& want, double rtol, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], rtol * std::fabs(want[i]) + 2e-6) << what << " element " << i;
}

// k-diffusion sample_dpmpp_2m_sde, solver "midpoint", s_noise 1; noise[k] in draw order.
// Flow models: lambda = log((1 - s) / s) and alpha_t = 1 - sigma_next, first sigma 1 -> 1 - 1e-4.
Vec dpmpp_2m_sde(std::vector<float> sig, double eta, bool flow, const std::vector<float>& noise) {
    if (flow && sig[0] >= 1.0f) sig[0] = 1.0f - 1e-4f;
    auto lambda = [flow](double s) { return flow ? std::log((1 - s) / s) : -std::log(s); };
    Vec x = kStart, old(3, 0.0);
    double h_last = 0;
    bool have_old = false;
    size_t k = 0;
    for (size_t i = 0; i + 1 < sig.size(); ++i) {
        const double s = sig[i], sn = sig[i + 1];
        Vec den(3);
        for (int j = 0; j < 3; ++j) den[j] = flow ? toy_flow(x[j], s) : toy(x[j], s);
        if (sn == 0) {
            x = den;
        } else {
            const double h = lambda(sn) - lambda(s), h_eta = h * (eta + 1);
            const double alpha_t = flow ? 1 - sn : 1.0;
            for (int j = 0; j < 3; ++j) {
                x[j] = sn / s * std::exp(-h * eta) * x[j] + alpha_t * -std::expm1(-h_eta) * den[j];
                if (have_old)
                    x[j] += 0.5 * alpha_t * -std::expm1(-h_eta) * (1 / (h_last / h)) *
                            (den[j] - old[j]);
            }
            if (eta > 0) {
                const double scale = sn * std::sqrt(-std::expm1(-2 * h * eta));
                for (int j = 0; j < 3; ++j) x[j] += noise[k++] * scale;
            }
            h_last = h;
        }
        old = den;
        have_old = true;
    }
    return x;
}

TEST(SamplersSde, DpmPlusPlus2MSde) {
    for (float eta : {1.0f, 0.5f, 0.0f}) {
        SamplerOptions opt;
        opt.eta = eta;
        Result r = run(DPMPP2M_SDE_SAMPLE_METHOD, kSig, opt);
        // One noise draw per step that does not end at 0 (three here) when eta > 0.
        EXPECT_EQ(r.noise.size(), eta > 0 ? 9u : 0u);
        expect_vec(r.x, dpmpp_2m_sde(kSig, eta, false, r.noise), 2e-5, "dpm++2m_sde");
    }
    EXPECT_EQ(default_eta(DPMPP2M_SDE_SAMPLE_METHOD), 1.0f);
    EXPECT_EQ(default_eta(DPMPP2M_SDE_BT_SAMPLE_METHOD), 1.0f);
    EXPECT_EQ(default_eta(LMS_SAMPLE_METHOD), 0.0f);
}

TEST(SamplersSde, DpmPlusPlus2MSdeRectifiedFlow) {
    const std::vector<float> sig = {1.0f, 0.75f, 0.4f, 0.1f, 0.0f};
    SamplerOptions opt;
    opt.is_flow = true;
    Result r = run(DPMPP2M_SDE_SAMPLE_METHOD, sig, opt);
    expect_vec(r.x, dpmpp_2m_sde(sig, 1.0, true, r.noise), 2e-5, "dpm++2m_sde flow");
    EXPECT_FLOAT_EQ(r.call_sigmas[0], 1.0f - 1e-4f);  // the model never sees sigma 1
}

TEST(SamplersSde, BrownianTreeIncrementsAreConsistent) {
    const BrownianTree tree(1234, 0.0f, 10.0f, Shape({4000}));
    // Increments add up: W(c) - W(a) = (W(b) - W(a)) + (W(c) - W(b)), whatever the split.
    const std::vector<float> ac = tree.noise(7.0f, 1.5f).to_vector();
    const std::vector<float> ab = tree.noise(7.0f, 3.2f).to_vector();
    const std::vector<float> bc = tree.noise(3.2f, 1.5f).to_vector();
    double mean = 0, var = 0;
    for (size_t i = 0; i < ac.size(); ++i) {
        const double sum = ab[i] * std::sqrt(3.8) + bc[i] * std::sqrt(1.7);
        ASSERT_NEAR(ac[i] * std::sqrt(5.5), sum, 1e-4) << i;
        mean += ab[i];
        var += ab[i] * ab[i];
    }
    mean /= ab.size();
    var = var / ab.size() - mean * mean;
    EXPECT_NEAR(mean, 0.0, 0.06);  // standard normal: 4000 draws
    EXPECT_NEAR(var, 1.0, 0.08);
    // The same seed gives the same noise; another seed another.
    EXPECT_EQ(BrownianTree(1234, 0.0f, 10.0f, Shape({4000})).noise(7.0f, 3.2f).to_vector(), ab);
    EXPECT_NE(BrownianTree(99, 0.0f, 10.0f, Shape({4000})).noise(7.0f, 3.2f).to_vector(), ab);
    EXPECT_THROW(BrownianTree(1, 1.0f, 1.0f, Shape({2})), Error);
}

TEST(SamplersSde, DpmPlusPlus2MSdeBrownianTree) {
    // Same steps as dpm++2m_sde with the tree's noise; two draws of the sampler generator seed it.
    Result r = run(DPMPP2M_SDE_BT_SAMPLE_METHOD, kSig);
    EXPECT_EQ(r.noise.size(), 2u);
    for (double v : r.x) EXPECT_TRUE(std::isfinite(v));
    Result again = run(DPMPP2M_SDE_BT_SAMPLE_METHOD, kSig);
    EXPECT_EQ(r.x, again.x);
    // Without noise it is dpm++2m_sde without noise.
    SamplerOptions quiet;
    quiet.eta = 0.0f;
    EXPECT_EQ(run(DPMPP2M_SDE_BT_SAMPLE_METHOD, kSig, quiet).x,
              run(DPMPP2M_SDE_SAMPLE_METHOD, kSig, quiet).x);
}

// The Lagrange basis integral of k-diffusion linear_multistep_coeff by composite Simpson.
double lms_coeff(int order, const std::vector<float>& t, int i, int j) {
    auto fn = [&](double tau) {
        double prod = 1;
        for (int k = 0; k < order; ++k)
            if (k != j) prod *= (tau - t[i - k]) / (static_cast<double>(t[i - j]) - t[i - k]);
        return prod;
    };
    const int n = 2000;
    const double a = t[i], b = t[i + 1], h = (b - a) / n;
    double sum = fn(a) + fn(b);
    for (int k = 1; k < n; ++k) sum += fn(a + k * h) * (k % 2 ? 4 : 2);
    return sum * h / 3;
}

Vec lms(const std::vector<float>& sig, int order) {
    Vec x = kStart;
    std::vector<Vec> ds;
    for (size_t i = 0; i + 1 < sig.size(); ++i) {
        Vec d(3);
        for (int j = 0; j < 3; ++j) d[j] = (x[j] - toy(x[j], sig[i])) / sig[i];
        ds.push_back(d);
        if (static_cast<int>(ds.size()) > order) ds.erase(ds.begin());
        const int cur = std::min(static_cast<int>(i) + 1, order);
        for (int j = 0; j < cur; ++j) {
            const double c = lms_coeff(cur, sig, static_cast<int>(i), j);
            for (int e = 0; e < 3; ++e) x[e] += c * ds[ds.size() - 1 - j][e];
        }
    }
    return x;
}

TEST(SamplersLms, MatchesLinearMultistep) {
    const std::vector<float> sig = karras_sigmas(8, 0.03f, 14.6f);
    for (int order : {1, 2, 4, 6}) {
        SamplerOptions opt;
        opt.lms_order = order;
        Result r = run(LMS_SAMPLE_METHOD, sig, opt);
        expect_vec(r.x, lms(sig, order), 1e-4, "lms");
        EXPECT_TRUE(r.noise.empty());
    }
    // The default order is k-diffusion's 4.
    SamplerOptions four;
    four.lms_order = 4;
    EXPECT_EQ(run(LMS_SAMPLE_METHOD, sig).x, run(LMS_SAMPLE_METHOD, sig, four).x);
    // Order 1 is Euler: x + d (sigma_next - sigma).
    SamplerOptions one;
    one.lms_order = 1;
    EXPECT_EQ(run(LMS_SAMPLE_METHOD, sig, one).x, run(EULER_SAMPLE_METHOD, sig).x);
}

TEST(SamplersLms, OrderIsChecked) {
    SamplerOptions opt;
    for (int bad : {0, -1, kMaxLmsOrder + 1}) {
        opt.lms_order = bad;
        EXPECT_THROW(run(LMS_SAMPLE_METHOD, kSig, opt), Error) << bad;
    }
}

}  // namespace
}  // namespace sd
