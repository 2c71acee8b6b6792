// Reference group / layer norm: two-pass mean and biased variance in double, then
// (x - mean) / sqrt(var + eps) * weight + bias (and SiLU), as torch.nn.functional.
#include <cmath>
#include <vector>

#include "ops/cpu/strided_iter.h"
#include "ops/norm.h"

namespace sd::ref {
namespace {

std::vector<float> param(const Tensor& p, int64_t n, float fill, const char* op, const char* arg) {
    if (!p.defined()) return std::vector<float>(static_cast<size_t>(n), fill);
    cpu::require_f32(p, op, arg);
    SD_CHECK(p.dim() == 1 && p.size(0) == n, "%s: %s %s, want [%lld]", op, arg,
             p.describe().c_str(), static_cast<long long>(n));
    return p.to_vector();
}

// Normalises v[begin, begin + n), where element i uses weight / bias index chan(i).
template <class Chan>
void normalise(std::vector<float>& v, int64_t begin, int64_t n, float eps, bool silu,
               const std::vector<float>& w, const std::vector<float>& b, Chan chan) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += v[begin + i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) var += (v[begin + i] - mean) * (v[begin + i] - mean);
    var /= static_cast<double>(n);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t c = chan(i);
        double y = (v[begin + i] - mean) * rstd * w[c] + b[c];
        if (silu) y = y / (1.0 + std::exp(-y));
        v[begin + i] = static_cast<float>(y);
    }
}

}  // namespace

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  float eps, bool silu) {
    cpu::require_f32(x, "group_norm", "x");
    SD_CHECK(x.dim() >= 2, "group_norm: x %s must be [B, C, ...]", x.describe().c_str());
    const int64_t batch = x.size(0), channels = x.size(1);
    SD_CHECK(groups > 0 && channels % groups == 0,
             "group_norm: %lld groups do not divide the %lld channels of x %s",
             static_cast<long long>(groups), static_cast<long long>(channels),
             x.describe().c_str());
    const std::vector<float> w = param(weight, channels, 1.0f, "group_norm", "weight");
    const std::vector<float> b = param(bias, channels, 0.0f, "group_norm", "bias");
    std::vector<float> v = x.to_vector();
    if (v.empty()) return Tensor::from_vector(x.shape(), v);
    const int64_t spatial = x.numel() / (batch * channels), cpg = channels / groups;
    for (int64_t bi = 0; bi < batch; ++bi) {
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t c0 = g * cpg;
            normalise(v, (bi * channels + c0) * spatial, cpg * spatial, eps, silu, w, b,
                      [&](int64_t i) { return c0 + i / spatial; });
        }
    }
    return Tensor::from_vector(x.shape(), v);
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
    cpu::require_f32(x, "layer_norm", "x");
    SD_CHECK(x.dim() >= 1, "layer_norm: x %s has no dimension to normalise", x.describe().c_str());
    const int64_t n = x.size(-1);
    const std::vector<float> w = param(weight, n, 1.0f, "layer_norm", "weight");
    const std::vector<float> b = param(bias, n, 0.0f, "layer_norm", "bias");
    std::vector<float> v = x.to_vector();
    for (int64_t r = 0; n > 0 && r < x.numel() / n; ++r) {
        normalise(v, r * n, n, eps, false, w, b, [](int64_t i) { return i; });
    }
    return Tensor::from_vector(x.shape(), v);
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
    cpu::require_f32(x, "rms_norm", "x");
    SD_CHECK(x.dim() >= 1, "rms_norm: x %s has no dimension to normalise", x.describe().c_str());
    const int64_t n = x.size(-1);
    const std::vector<float> w = param(weight, n, 1.0f, "rms_norm", "weight");
    std::vector<float> v = x.to_vector();
    for (int64_t r = 0; n > 0 && r < x.numel() / n; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(v[r * n + i]) * v[r * n + i];
        const double rs = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i) v[r * n + i] = static_cast<float>(v[r * n + i] * rs * w[i]);
    }
    return Tensor::from_vector(x.shape(), v);
}

}  // namespace sd::ref
