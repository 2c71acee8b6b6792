// 2-D convolution, NCHW, as torch.nn.functional.conv2d with groups = 1 and dilation = 1.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace sd {

struct Conv2dOptions {
    int stride_h = 1, stride_w = 1;
    int pad_h = 0, pad_w = 0;  // zero padding on each side
    // The input is read upsampled 2x by nearest neighbour (an Upsample block's interpolate
    // then conv) without building the upsampled tensor; stride 1 only.
    bool upsample2x = false;
};

// x: f32 [B, C, H, W] (any strides); weight: [O, C, KH, KW] in f32, f16 or bf16 (the
// dtypes conv weights come in), or a block-quant type whose rows are whole; bias:
// undefined or [O]. Returns f32 [B, O, OH, OW], OH = (H + 2 pad_h - KH) / stride_h + 1
// (H, W doubled first with upsample2x).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});

namespace ref {
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});
}  // namespace ref

}  // namespace sd
