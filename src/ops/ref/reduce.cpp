// Reference sum / mean along one dimension, accumulated in double.
#include <vector>

#include "ops/cpu/strided_iter.h"
#include "ops/reduce.h"

namespace sd::ref {
namespace {

Tensor reduce(const Tensor& x, int dim, bool keepdim, bool mean, const char* op) {
    cpu::require_f32(x, op, "x");
    if (x.dim() == 0) {
        x.reshape({1}).wrap_dim(dim);
        return x.clone();
    }
    const int d = x.wrap_dim(dim);
    int64_t outer = 1, inner = 1;
    Shape shape;
    for (int i = 0; i < x.dim(); ++i) {
        if (i < d) outer *= x.size(i);
        if (i > d) inner *= x.size(i);
        if (i != d || keepdim) shape.push_back(i == d ? 1 : x.size(i));
    }
    const int64_t n = x.size(d);
    const std::vector<float> v = x.to_vector();
    std::vector<float> out(static_cast<size_t>(outer * inner));
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            double s = 0;
            for (int64_t j = 0; j < n; ++j) s += v[(o * n + j) * inner + i];
            out[o * inner + i] = static_cast<float>(mean ? s / static_cast<double>(n) : s);
        }
    }
    return Tensor::from_vector(shape, out);
}

}  // namespace

Tensor sum(const Tensor& x, int dim, bool keepdim) {
    return reduce(x, dim, keepdim, false, "sum");
}
Tensor mean(const Tensor& x, int dim, bool keepdim) {
    return reduce(x, dim, keepdim, true, "mean");
}

}  // namespace sd::ref
