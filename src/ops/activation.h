// Pointwise nonlinearities and softmax, f32 in, f32 out (any strides in, contiguous out).
#pragma once

#include "tensor/tensor.h"

namespace sd {

enum class GeluApprox { None, Tanh };  // erf form, or the tanh approximation

Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::None);
Tensor silu(const Tensor& x);
Tensor quick_gelu(const Tensor& x);  // x * sigmoid(1.702 x), CLIP's activation
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor clamp(const Tensor& x, float lo, float hi);
// GEGLU: the last dimension splits into halves (a, gate); returns a * gelu(gate).
Tensor geglu(const Tensor& x);
// Softmax along `dim`.
Tensor softmax(const Tensor& x, int dim = -1);

namespace ref {
Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::None);
Tensor silu(const Tensor& x);
Tensor quick_gelu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor clamp(const Tensor& x, float lo, float hi);
Tensor geglu(const Tensor& x);
Tensor softmax(const Tensor& x, int dim = -1);
}  // namespace ref

}  // namespace sd
