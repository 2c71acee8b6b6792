// Activations and softmax: every kernel family against the double-precision reference on
// random, odd-sized, strided and extreme inputs, plus closed-form values.
//
// Tolerances (|got - want| <= atol + rtol |want|):
//   gelu, silu, sigmoid, tanh, geglu: rtol 2e-6 (the vector math measures <= 5e-7, see
//     VectorMathAccuracySweep); quick_gelu 1e-5 and gelu(tanh) 3e-5: their exp argument
//     (1.702 x, 2u) is rounded to f32 first, which alone moves the result by |arg| 2^-24
//     relative (up to 50 in the tails tested). atol 1e-36: results that small may flush to 0.
//   clamp: exact.   softmax: rtol 1e-5, atol 1e-7 (exp to 2 ulp, sums of up to 10^5 terms).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/activation.h"
#include "ops/cpu/pointwise_kernels.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr double kRtol = 2e-6;
constexpr double kAtol = 1e-36;

template <class F>
void for_each_isa(F f) {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        SCOPED_TRACE(isa_name(isa));
        f(isa);
    }
}

struct Unary {
    const char* name;
    std::function<Tensor(const Tensor&)> kernel, ref;
    double rtol;
};

std::vector<Unary> unaries() {
    return {
        {"gelu", [](const Tensor& x) { return gelu(x); },
         [](const Tensor& x) { return ref::gelu(x); }, kRtol},
        {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::Tanh); },
         [](const Tensor& x) { return ref::gelu(x, GeluApprox::Tanh); }, 3e-5},
        {"silu", [](const Tensor& x) { return silu(x); },
         [](const Tensor& x) { return ref::silu(x); }, kRtol},
        {"quick_gelu", [](const Tensor& x) { return quick_gelu(x); },
         [](const Tensor& x) { return ref::quick_gelu(x); }, 1e-5},
        {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
         [](const Tensor& x) { return ref::sigmoid(x); }, kRtol},
        {"tanh", [](const Tensor& x) { return sd::tanh(x); },
         [](const Tensor& x) { return ref::tanh(x); }, kRtol},
    };
}

Tensor values(const std::vector<float>& v) {
    return Tensor::from_vector({static_cast<int64_t>(v.size())}, v);
}

TEST(Activation, MatchesReferenceOnOddSizes) {
    for_each_isa([](Isa) {
        for (const Unary& op : unaries()) {
            for (int64_t n : {1, 3, 7, 15, 16, 17, 33, 1000, 100003}) {
                Tensor x = test::random_tensor({n}, 11 + static_cast<uint32_t>(n), -8.0f, 8.0f);
                test::expect_close(op.kernel(x), op.ref(x), kAtol, op.rtol,
                                   std::string(op.name) + " n=" + std::to_string(n));
            }
        }
    });
}

TEST(Activation, MatchesReferenceOnStridedViews) {
    for_each_isa([](Isa) {
        for (const Unary& op : unaries()) {
            Tensor x = test::random_tensor({3, 5, 17}, 5, -6.0f, 6.0f);
            Tensor nc = test::non_contiguous_copy(x);
            ASSERT_FALSE(nc.is_contiguous());
            test::expect_close(op.kernel(nc), op.ref(x), kAtol, op.rtol,
                               std::string(op.name) + " permuted");
            // A stride-0 expand view and a narrowed view.
            Tensor row = test::random_tensor({1, 33}, 6, -4.0f, 4.0f);
            Tensor ex = row.expand({9, 33});
            test::expect_close(op.kernel(ex), op.ref(ex), kAtol, op.rtol,
                               std::string(op.name) + " expand");
            Tensor col = test::random_tensor({40, 1}, 7).expand({40, 5});
            test::expect_close(op.kernel(col), op.ref(col), kAtol, op.rtol,
                               std::string(op.name) + " expand inner");
            Tensor nar = x.narrow(2, 3, 11);
            test::expect_close(op.kernel(nar), op.ref(nar), kAtol, op.rtol,
                               std::string(op.name) + " narrow");
            Tensor scalar = Tensor::full({}, 0.75f);
            test::expect_close(op.kernel(scalar), op.ref(scalar), kAtol, op.rtol,
                               std::string(op.name) + " 0-d");
        }
    });
}

const std::vector<float>& extremes() {
    static const std::vector<float> v = [] {
        const float inf = std::numeric_limits<float>::infinity();
        std::vector<float> out;
        for (float a : {0.0f,  1e-30f, 1e-8f, 1e-3f, 0.3f,  0.624f, 0.626f, 1.0f,  2.5f,
                        5.0f,  9.0f,   10.0f, 15.0f, 20.0f, 30.0f,  50.0f,  87.0f, 88.5f,
                        89.0f, 100.0f, 1e4f,  1e20f, 1e30f, 3e38f,  inf}) {
            out.push_back(a);
            out.push_back(-a);
        }
        return out;
    }();
    return v;
}

TEST(Activation, ExtremeValues) {
    for_each_isa([](Isa) {
        for (const Unary& op : unaries()) {
            test::expect_close(op.kernel(values(extremes())), op.ref(values(extremes())), kAtol,
                               op.rtol, op.name);
            Tensor nan = op.kernel(values({std::numeric_limits<float>::quiet_NaN()}));
            EXPECT_TRUE(std::isnan(nan.item())) << op.name;
        }
        // Saturation: exactly 0 / 1 / x far out.
        EXPECT_EQ(sigmoid(values({-200.0f})).item(), 0.0f);
        EXPECT_EQ(sigmoid(values({200.0f})).item(), 1.0f);
        EXPECT_EQ(sd::tanh(values({-50.0f})).item(), -1.0f);
        EXPECT_EQ(gelu(values({30.0f})).item(), 30.0f);
        EXPECT_EQ(silu(values({INFINITY})).item(), INFINITY);
        EXPECT_EQ(gelu(values({INFINITY})).item(), INFINITY);
    });
}

TEST(Activation, ClosedFormValues) {
    struct Case {
        const char* name;
        std::function<Tensor(const Tensor&)> fn;
        float x;
        double want;
    };
    const std::vector<Case> cases = {
        {"gelu", [](const Tensor& t) { return gelu(t); }, 1.0f, 0.841344746068542948},
        {"gelu", [](const Tensor& t) { return gelu(t); }, -1.0f, -0.158655253931457051},
        {"gelu", [](const Tensor& t) { return gelu(t); }, -3.0f, -0.00404969409489028358},
        {"gelu", [](const Tensor& t) { return gelu(t); }, -5.0f, -1.43325785939596956e-6},
        {"gelu", [](const Tensor& t) { return gelu(t); }, -10.0f, -7.61985301648650307e-23},
        {"gelu_tanh", [](const Tensor& t) { return gelu(t, GeluApprox::Tanh); }, 1.0f,
         0.841191990608276705},
        {"gelu_tanh", [](const Tensor& t) { return gelu(t, GeluApprox::Tanh); }, -3.0f,
         -0.00363739208177301884},
        {"silu", [](const Tensor& t) { return silu(t); }, 1.0f, 0.731058578630004879},
        {"silu", [](const Tensor& t) { return silu(t); }, -3.0f, -0.142277619532700343},
        {"quick_gelu", [](const Tensor& t) { return quick_gelu(t); }, 1.0f, 0.845795765932821296},
        {"sigmoid", [](const Tensor& t) { return sigmoid(t); }, 0.0f, 0.5},
        {"sigmoid", [](const Tensor& t) { return sigmoid(t); }, 2.0f, 0.880797077977882444},
        {"tanh", [](const Tensor& t) { return sd::tanh(t); }, 0.5f, 0.462117157260009759},
        {"tanh", [](const Tensor& t) { return sd::tanh(t); }, -1.0f, -0.761594155955764888},
    };
    for_each_isa([&](Isa) {
        for (const Case& c : cases) {
            const double got = c.fn(values({c.x})).item();
            EXPECT_NEAR(got, c.want, 4e-7 * std::fabs(c.want)) << c.name << "(" << c.x << ")";
        }
    });
}

// Measured accuracy of the vector math over dense sweeps, against double: the bounds the
// comment in ops/cpu/pointwise_kernels.h states.
TEST(Activation, VectorMathAccuracySweep) {
    constexpr int64_t kN = 400001;
    // cond: |argument of the exp| where the kernel must round it to f32 first (1.702 x,
    // 2u); that rounding alone moves the result by |arg| 2^-24, so the bound scales with it.
    struct Fn {
        cpu::UnaryKind kind;
        double (*want)(double);
        double (*cond)(double);
        float lo, hi;
        double max_rel;
    };
    auto none = [](double) { return 0.0; };
    const Fn fns[] = {
        {cpu::UnaryKind::Exp, [](double x) { return std::exp(x); }, none, -87.0f, 88.7f, 1.5e-7},
        {cpu::UnaryKind::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, none, -80.0f,
         40.0f, 2.5e-7},
        {cpu::UnaryKind::Tanh, [](double x) { return std::tanh(x); }, none, -12.0f, 12.0f, 2.5e-7},
        {cpu::UnaryKind::Silu, [](double x) { return x / (1 + std::exp(-x)); }, none, -80.0f, 40.0f,
         2.5e-7},
        {cpu::UnaryKind::QuickGelu, [](double x) { return x / (1 + std::exp(-1.702 * x)); },
         [](double x) { return std::fabs(1.702 * x); }, -50.0f, 40.0f, 2.5e-7},
        {cpu::UnaryKind::GeluTanh,
         [](double x) {
             return x / (1 + std::exp(-1.5957691216057308 * (x + 0.044715 * x * x * x)));
         },
         [](double x) { return std::fabs(1.5957691216057308 * (x + 0.044715 * x * x * x)); }, -9.5f,
         12.0f, 2.5e-7},
        {cpu::UnaryKind::Gelu, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); },
         none, -13.0f, 14.0f, 5e-7},
    };
    std::vector<float> xs(kN), ys(kN);
    for (Isa isa : test::available_isas()) {
        const cpu::PointwiseKernels& k = cpu::pointwise_kernels(isa);
        for (const Fn& f : fns) {
            for (int64_t i = 0; i < kN; ++i) {
                xs[i] = f.lo + (f.hi - f.lo) * static_cast<float>(i) / static_cast<float>(kN - 1);
            }
            k.unary[static_cast<int>(f.kind)](xs.data(), ys.data(), kN);
            double worst = 0;
            float at = 0;
            for (int64_t i = 0; i < kN; ++i) {
                const double w = f.want(xs[i]);
                if (std::fabs(w) < 1e-36) continue;  // the flush-to-0 range
                const double e = std::fabs(ys[i] - w) / std::fabs(w) / (1 + f.cond(xs[i]));
                if (e > worst) worst = e, at = xs[i];
            }
            EXPECT_LE(worst, f.max_rel)
                << isa_name(isa) << " kind " << static_cast<int>(f.kind) << " worst at x = " << at;
        }
    }
}

TEST(Activation, Clamp) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for_each_isa([&](Isa) {
        Tensor x = test::random_tensor({5, 37}, 3, -3.0f, 3.0f);
        test::expect_close(clamp(x, -1.0f, 0.5f), ref::clamp(x, -1.0f, 0.5f), 0, 0, "clamp");
        test::expect_close(clamp(test::non_contiguous_copy(x), -1.0f, 0.5f),
                           ref::clamp(x, -1.0f, 0.5f), 0, 0, "clamp strided");
        std::vector<float> got =
            clamp(values({nan, -INFINITY, INFINITY, 0.25f}), -1.0f, 1.0f).to_vector();
        EXPECT_TRUE(std::isnan(got[0]));
        EXPECT_EQ(got[1], -1.0f);
        EXPECT_EQ(got[2], 1.0f);
        EXPECT_EQ(got[3], 0.25f);
        // lo > hi: everything becomes hi, as torch.clamp.
        EXPECT_EQ(clamp(values({-5.0f, 5.0f}), 2.0f, 1.0f).to_vector(),
                  (std::vector<float>{1.0f, 1.0f}));
    });
}

TEST(Activation, Geglu) {
    for_each_isa([](Isa) {
        for (int64_t n : {1, 3, 8, 17, 40, 640}) {
            Tensor x =
                test::random_tensor({2, 7, 2 * n}, 9 + static_cast<uint32_t>(n), -5.0f, 5.0f);
            test::expect_close(geglu(x), ref::geglu(x), kAtol, kRtol,
                               "geglu n=" + std::to_string(n));
            test::expect_close(geglu(test::non_contiguous_copy(x)), ref::geglu(x), kAtol, kRtol,
                               "geglu strided n=" + std::to_string(n));
        }
        // a * gelu(gate) by hand.
        Tensor x = values({2.0f, 1.0f});
        EXPECT_NEAR(geglu(x).item(), 2.0 * 0.841344746068542948, 1e-6);
    });
    EXPECT_THROW(geglu(Tensor::zeros({2, 5})), Error);
}

TEST(Activation, SoftmaxMatchesReference) {
    for_each_isa([](Isa) {
        Tensor x = test::random_tensor({4, 33, 17}, 21, -10.0f, 10.0f);
        for (int dim : {-1, 0, 1, 2}) {
            test::expect_close(softmax(x, dim), ref::softmax(x, dim), 1e-7, 1e-5,
                               "softmax dim " + std::to_string(dim));
            test::expect_close(softmax(test::non_contiguous_copy(x), dim), ref::softmax(x, dim),
                               1e-7, 1e-5, "softmax strided dim " + std::to_string(dim));
        }
        for (int64_t n : {1, 3, 15, 16, 17, 1000, 100003}) {
            Tensor r = test::random_tensor({3, n}, 4 + static_cast<uint32_t>(n), -30.0f, 30.0f);
            test::expect_close(softmax(r), ref::softmax(r), 1e-7, 1e-5,
                               "softmax n=" + std::to_string(n));
        }
        // Large values: shifted by the max, no overflow.
        Tensor big = test::random_tensor({2, 50}, 8, 1e4f, 1.001e4f);
        test::expect_close(softmax(big), ref::softmax(big), 1e-7, 1e-5, "softmax large");
        Tensor scalar = Tensor::full({}, 3.0f);
        EXPECT_EQ(softmax(scalar).item(), 1.0f);
    });
}

TEST(Softmax, InfinitiesAsTorch) {
    const float inf = std::numeric_limits<float>::infinity();
    for_each_isa([&](Isa) {
        // -inf entries get 0; the rest renormalise.
        std::vector<float> got = softmax(values({-inf, 0.0f, -inf, 0.0f})).to_vector();
        EXPECT_EQ(got, (std::vector<float>{0.0f, 0.5f, 0.0f, 0.5f}));
        // A row of only -inf is NaN (exp(-inf - -inf)), as torch.softmax.
        for (float v : softmax(values({-inf, -inf, -inf})).to_vector()) EXPECT_TRUE(std::isnan(v));
        // Masked attention-style rows with a long tail of -inf.
        std::vector<float> row(37, -inf);
        row[5] = 1.0f;
        row[30] = 1.0f;
        got = softmax(values(row)).to_vector();
        for (int i = 0; i < 37; ++i) EXPECT_EQ(got[i], (i == 5 || i == 30) ? 0.5f : 0.0f) << i;
    });
}

TEST(Activation, RejectsBadInput) {
    Tensor h = Tensor::zeros({4}, DType::F16);
    EXPECT_THROW(gelu(h), Error);
    EXPECT_THROW(silu(Tensor()), Error);
    EXPECT_THROW(softmax(h), Error);
    EXPECT_THROW(softmax(Tensor::zeros({2, 3}), 2), Error);
    EXPECT_THROW(ref::gelu(h), Error);
    try {
        geglu(Tensor::zeros({3, 7}));
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[3, 7]"), std::string::npos) << e.what();
    }
}

TEST(Activation, Multithreaded) {
    set_num_threads(4);
    Tensor x = test::random_tensor({8, 40000}, 77, -6.0f, 6.0f);
    test::expect_close(gelu(x), ref::gelu(x), kAtol, kRtol, "gelu 4 threads");
    test::expect_close(softmax(x), ref::softmax(x), 1e-7, 1e-5, "softmax 4 threads");
    test::expect_close(geglu(x), ref::geglu(x), kAtol, kRtol, "geglu 4 threads");
    set_num_threads(0);
}

}  // namespace
}  // namespace sd
