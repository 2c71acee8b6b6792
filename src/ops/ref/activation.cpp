// Reference activations: the formulas of torch.nn.functional evaluated in double on the
// logical values, one at a time.
#include <cmath>
#include <vector>

#include "ops/activation.h"
#include "ops/cpu/strided_iter.h"

namespace sd::ref {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

double sigmoid_d(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
// 0.5 x (1 + erf(x / sqrt2)), written with erfc so the negative tail keeps its digits.
double gelu_d(double x) {
    return 0.5 * x * std::erfc(-x * kSqrtHalf);
}
// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated as x / (1 + exp(-2u)):
// the same value, without the cancellation of 1 + tanh(u) in the negative tail.
double gelu_tanh_d(double x) {
    const double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
    return x / (1.0 + std::exp(-2.0 * u));
}

template <class F>
Tensor map(const Tensor& x, const char* op, F f) {
    cpu::require_f32(x, op, "x");
    std::vector<float> v = x.to_vector();
    for (float& e : v) e = static_cast<float>(f(static_cast<double>(e)));
    return Tensor::from_vector(x.shape(), v);
}

}  // namespace

Tensor gelu(const Tensor& x, GeluApprox approx) {
    return approx == GeluApprox::Tanh ? map(x, "gelu", gelu_tanh_d) : map(x, "gelu", gelu_d);
}
Tensor silu(const Tensor& x) {
    return map(x, "silu", [](double v) { return v * sigmoid_d(v); });
}
Tensor quick_gelu(const Tensor& x) {
    return map(x, "quick_gelu", [](double v) { return v * sigmoid_d(1.702 * v); });
}
Tensor sigmoid(const Tensor& x) {
    return map(x, "sigmoid", sigmoid_d);
}
Tensor tanh(const Tensor& x) {
    return map(x, "tanh", [](double v) { return std::tanh(v); });
}
Tensor clamp(const Tensor& x, float lo, float hi) {
    // torch.clamp: NaN stays NaN; lo > hi gives hi everywhere.
    return map(x, "clamp", [lo, hi](double v) {
        return std::isnan(v) ? v : std::min<double>(std::max<double>(v, lo), hi);
    });
}

Tensor geglu(const Tensor& x) {
    cpu::require_f32(x, "geglu", "x");
    SD_CHECK(x.dim() >= 1 && x.size(-1) % 2 == 0,
             "geglu: the last dimension of %s must be even (halves a, gate)", x.describe().c_str());
    const int64_t n = x.size(-1) / 2;
    Shape shape = x.shape();
    shape[shape.size() - 1] = n;
    const std::vector<float> v = x.to_vector();
    std::vector<float> out(static_cast<size_t>(shape.numel()));
    for (size_t r = 0; n > 0 && r < out.size() / n; ++r) {
        for (int64_t j = 0; j < n; ++j) {
            const double a = v[r * 2 * n + j], gate = v[r * 2 * n + n + j];
            out[r * n + j] = static_cast<float>(a * gelu_d(gate));
        }
    }
    return Tensor::from_vector(shape, out);
}

Tensor softmax(const Tensor& x, int dim) {
    cpu::require_f32(x, "softmax", "x");
    if (x.dim() == 0) return ref::softmax(x.reshape({1}), dim).reshape({});
    const int d = x.wrap_dim(dim);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; ++i) outer *= x.size(i);
    for (int i = d + 1; i < x.dim(); ++i) inner *= x.size(i);
    const int64_t n = x.size(d);
    std::vector<float> v = x.to_vector();
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            auto at = [&](int64_t j) -> float& { return v[(o * n + j) * inner + i]; };
            double m = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; ++j) m = std::max<double>(m, at(j));
            for (int64_t j = 0; j < n; ++j) sum += std::exp(at(j) - m);
            for (int64_t j = 0; j < n; ++j) at(j) = static_cast<float>(std::exp(at(j) - m) / sum);
        }
    }
    return Tensor::from_vector(x.shape(), v);
}

}  // namespace sd::ref
