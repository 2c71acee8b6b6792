// Dense products. Activations are f32; the weight of linear() may be any dtype.
#pragma once

#include "tensor/tensor.h"

namespace sd {

// y = x W^T + b, as torch.nn.functional.linear.
// x: f32 [..., K] (any strides); weight: [N, K] of any dtype, rows contiguous;
// bias: undefined or [N] (f32/f16/bf16). Returns f32 [..., N], contiguous.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// Batched matrix product as torch.matmul for inputs of 2+ dims: a [..., M, K] times
// b [..., K, N], batch dimensions broadcast. f32 inputs, any strides. Returns f32 [..., M, N].
Tensor matmul(const Tensor& a, const Tensor& b);

namespace ref {
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
Tensor matmul(const Tensor& a, const Tensor& b);
}  // namespace ref

}  // namespace sd
