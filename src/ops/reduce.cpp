// Sum and mean along one dimension, accumulated in double across blocks: rows (reducing
// the innermost dimension) through the vector sum kernel, other dimensions by adding whole
// rows of the input into a double accumulator a column block at a time.
#include "ops/reduce.h"

#include <algorithm>

#include "ops/cpu/pointwise_kernels.h"
#include "ops/cpu/strided_iter.h"

namespace sd {
namespace {

Tensor reduce(const Tensor& x, int dim, bool keepdim, bool mean, const char* name) {
    cpu::require_f32(x, name, "x");
    if (x.dim() == 0) {
        x.reshape({1}).wrap_dim(dim);  // only 0 and -1 name the one dimension
        return x.contiguous().clone();
    }
    const int d = x.wrap_dim(dim);
    Shape shape;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < x.dim(); ++i) {
        if (i < d) outer *= x.size(i);
        if (i > d) inner *= x.size(i);
        if (i != d || keepdim) shape.push_back(i == d ? 1 : x.size(i));
    }
    const int64_t n = x.size(d);
    Tensor out = Tensor::empty(shape);
    if (out.numel() == 0) return out;
    const Tensor xc = x.contiguous();
    const float* src = xc.data<float>();
    float* dst = out.data<float>();
    // torch: the mean over an empty dimension is NaN (0 * inf here), the sum 0.
    const double scale = mean ? 1.0 / static_cast<double>(n) : 1.0;
    if (inner == 1) {
        const auto sum = cpu::pointwise_kernels().sum;
        parallel_for(outer, std::max<int64_t>(1, cpu::kGrainMemory / std::max<int64_t>(n, 1)),
                     [&](int64_t o0, int64_t o1) {
                         for (int64_t o = o0; o < o1; ++o) {
                             dst[o] = static_cast<float>(sum(src + o * n, n) * scale);
                         }
                     });
        return out;
    }
    constexpr int64_t kCols = 512;
    const int64_t blocks = (inner + kCols - 1) / kCols;
    parallel_for(outer * blocks,
                 std::max<int64_t>(1, cpu::kGrainMemory / (kCols * std::max<int64_t>(n, 1))),
                 [&](int64_t t0, int64_t t1) {
                     double acc[kCols];
                     for (int64_t t = t0; t < t1; ++t) {
                         const int64_t o = t / blocks, c0 = (t % blocks) * kCols;
                         const int64_t m = std::min(kCols, inner - c0);
                         std::fill(acc, acc + m, 0.0);
                         const float* base = src + o * n * inner + c0;
                         for (int64_t r = 0; r < n; ++r) {
                             const float* row = base + r * inner;
                             for (int64_t i = 0; i < m; ++i) acc[i] += row[i];
                         }
                         float* y = dst + o * inner + c0;
                         for (int64_t i = 0; i < m; ++i) y[i] = static_cast<float>(acc[i] * scale);
                     }
                 });
    return out;
}

}  // namespace

Tensor sum(const Tensor& x, int dim, bool keepdim) {
    return reduce(x, dim, keepdim, false, "sum");
}
Tensor mean(const Tensor& x, int dim, bool keepdim) {
    return reduce(x, dim, keepdim, true, "mean");
}

}  // namespace sd
