// Reference elementwise arithmetic: every output index maps to the operands' indices by
// NumPy broadcasting (right-aligned, size-1 dimensions repeat); f32 arithmetic as torch.
#include <vector>

#include "ops/cpu/strided_iter.h"
#include "ops/elementwise.h"

namespace sd::ref {
namespace {

// Row-major flat index into `in` (right-aligned against `out`) of the output multi-index.
int64_t broadcast_index(const Shape& out, const Shape& in, const std::vector<int64_t>& idx) {
    int64_t flat = 0;
    const int lead = out.size() - in.size();
    for (int d = 0; d < in.size(); ++d) flat = flat * in[d] + (in[d] == 1 ? 0 : idx[d + lead]);
    return flat;
}

template <class F>
Tensor binary(const Tensor& a, const Tensor& b, const char* op, F f) {
    cpu::require_f32(a, op, "a");
    cpu::require_f32(b, op, "b");
    const Shape shape = broadcast_shapes(a.shape(), b.shape());
    const std::vector<float> va = a.to_vector(), vb = b.to_vector();
    std::vector<float> out(static_cast<size_t>(shape.numel()));
    std::vector<int64_t> idx(static_cast<size_t>(shape.size()), 0);
    for (size_t flat = 0; flat < out.size(); ++flat) {
        out[flat] = f(va[broadcast_index(shape, a.shape(), idx)],
                      vb[broadcast_index(shape, b.shape(), idx)]);
        for (int d = shape.size() - 1; d >= 0; --d) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
    return Tensor::from_vector(shape, out);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
    return binary(a, b, "add", [](float x, float y) { return x + y; });
}
Tensor sub(const Tensor& a, const Tensor& b) {
    return binary(a, b, "sub", [](float x, float y) { return x - y; });
}
Tensor mul(const Tensor& a, const Tensor& b) {
    return binary(a, b, "mul", [](float x, float y) { return x * y; });
}
Tensor div(const Tensor& a, const Tensor& b) {
    return binary(a, b, "div", [](float x, float y) { return x / y; });
}
Tensor scale(const Tensor& x, float s) {
    return binary(x, Tensor::full({}, s), "scale", [](float v, float c) { return v * c; });
}
Tensor add_scalar(const Tensor& x, float s) {
    return binary(x, Tensor::full({}, s), "add_scalar", [](float v, float c) { return v + c; });
}

}  // namespace sd::ref
