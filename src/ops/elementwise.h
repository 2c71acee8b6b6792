// Elementwise arithmetic on f32 tensors with NumPy/PyTorch broadcasting. Any strides in,
// contiguous out. The operators make model code read like the Python it mirrors.
#pragma once

#include "tensor/tensor.h"

namespace sd {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, float s);       // x * s
Tensor add_scalar(const Tensor& x, float s);  // x + s

// Writes a + s * b into `out`: a, b and out of one shape, out contiguous f32 (e.g. a channel
// range of a batch-1 buffer). out may be a or b itself (each element is read before it is
// written), but must not partly overlap them. For residual sums built in place.
void add_scaled_into(const Tensor& a, const Tensor& b, float s, const Tensor& out);

// The broadcast shape of a and b; throws naming both shapes when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator*(const Tensor& x, float s) { return scale(x, s); }
inline Tensor operator*(float s, const Tensor& x) { return scale(x, s); }
inline Tensor operator+(const Tensor& x, float s) { return add_scalar(x, s); }

namespace ref {
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, float s);
Tensor add_scalar(const Tensor& x, float s);
}  // namespace ref

}  // namespace sd
