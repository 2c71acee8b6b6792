// conv2d's direct path for convolutions with few output channels (internal to src/ops;
// conv.cpp picks it, see conv_direct.cpp for the blocking scheme).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/conv.h"
#include "tensor/tensor.h"

namespace sd::conv_detail {

// `count` floats, 64-byte aligned, one buffer per thread kept from call to call (grown to
// the largest asked): the direct and Winograd paths' per-thread working space.
// d[t] = row[(iw0 + t) / 2] where 0 <= iw0 + t < 2w, else 0, for t < n: a stretch of an
// image row upsampled 2x by nearest neighbour, zero-padded (stride 1).
void copy_upsampled(const float* row, int64_t w, int64_t iw0, float* d, int64_t n);

// Whether conv2d_direct takes this convolution with the active kernels: stride 1, a
// kernel larger than 1x1, at most kDirectMaxOut output channels, a plain float weight.
bool direct_applies(const Tensor& x, const Tensor& weight, const Conv2dOptions& options);

// The convolution of every image of x (contiguous) by weight (contiguous) into out
// (contiguous [B, O, OH, OW]), bias (null or [O]), residual (null or laid out as out) and
// LeakyReLU included, in that order.
void conv2d_direct(const Tensor& x, const Tensor& weight, const float* bias,
                   const Conv2dOptions& options, float* out, const float* residual = nullptr);

}  // namespace sd::conv_detail
