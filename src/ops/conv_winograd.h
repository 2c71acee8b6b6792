// conv2d's Winograd path for 3x3 convolutions of stride 1 (internal to src/ops; conv.cpp
// picks it where Conv2dOptions::winograd asks, see conv_winograd.cpp).
#pragma once

#include "ops/conv.h"
#include "tensor/tensor.h"

namespace sd::conv_detail {

// Whether conv2d_winograd takes this convolution with the active kernels: options.winograd,
// a 3x3 kernel, stride 1, a plain float weight (any number of channels), f32 GEMM kernels
// (not the bf16 compute type).
bool winograd_applies(const Tensor& x, const Tensor& weight, const Conv2dOptions& options);

// As conv2d_direct (same arguments and result) by Winograd's F(4x4, 3x3).
void conv2d_winograd(const Tensor& x, const Tensor& weight, const float* bias,
                     const Conv2dOptions& options, float* out, const float* residual = nullptr);

}  // namespace sd::conv_detail
