#include "sampling/condition_cache.h"

#include <cmath>
#include <cstring>

namespace sd::cache_math {

std::vector<float> values(const Tensor& t) {
    const Tensor c = t.contiguous();
    const float* p = c.data<float>();
    return std::vector<float>(p, p + c.numel());
}

std::vector<float> diff(const Tensor& input, const Tensor& output) {
    if (input.numel() == 0 || input.numel() != output.numel()) return {};
    const Tensor in = input.contiguous(), out = output.contiguous();
    const float* a = in.data<float>();
    const float* b = out.data<float>();
    std::vector<float> d(static_cast<size_t>(out.numel()));
    for (size_t i = 0; i < d.size(); ++i) d[i] = b[i] - a[i];
    return d;
}

Tensor apply_diff(const Tensor& input, const std::vector<float>& diff) {
    Tensor out = input.clone();
    float* p = out.data<float>();
    for (size_t i = 0; i < diff.size(); ++i) p[i] += diff[i];
    return out;
}

float mean_abs_diff(const float* a, const float* b, size_t n) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += std::fabs(a[i] - b[i]);
    return n > 0 ? sum / static_cast<float>(n) : 0.0f;
}

float mean_abs(const float* a, size_t n) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += std::fabs(a[i]);
    return n > 0 ? sum / static_cast<float>(n) : 0.0f;
}

float relative_l1(const float* prev, const float* curr, size_t n) {
    if (n == 0) return 0.0f;
    float sum_diff = 0.0f, sum_abs = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        sum_diff += std::fabs(prev[i] - curr[i]);
        sum_abs += std::fabs(prev[i]);
    }
    return sum_diff / (sum_abs + 1e-6f);
}

}  // namespace sd::cache_math
