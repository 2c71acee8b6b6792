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
    // LeakyReLU on the result in the same call: values below 0 are multiplied by
    // negative_slope (ESRGAN's convolutions are each followed by one).
    bool leaky_relu = false;
    float negative_slope = 0.01f;
    // Winograd F(4x4, 3x3) where it applies (3x3, stride 1, f32 compute type): a quarter of
    // the multiplies (2.3-2.5x faster at 64 channels, 2.5-3.5x at 128 .. 512), rounding
    // errors seven to twenty times direct summation's (1e-5 .. 4e-5 of the output's scale
    // at 64 .. 512 channels, against ~2e-6). Off by default; TAESD and the AutoencoderKL's
    // wide convs ask for it.
    bool winograd = false;
};

// x: f32 [B, C, H, W] (any strides); weight: [O, C, KH, KW] in f32, f16 or bf16 (the
// dtypes conv weights come in), or a block-quant type whose rows are whole; bias:
// undefined or [O]. Returns f32 [B, O, OH, OW], OH = (H + 2 pad_h - KH) / stride_h + 1
// (H, W doubled first with upsample2x).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});

// conv2d writing its result into `out`, a contiguous f32 tensor of the result's shape,
// instead of a new tensor: e.g. a channel range of a batch-1 buffer, so that a dense block
// builds its concatenated features in place. `out` must not overlap x.
void conv2d_into(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& options, const Tensor& out);

// conv2d(x, weight, bias) + residual (f32 of the result's shape), then options' LeakyReLU:
// a residual block's skip and activation added in the convolution's store, no extra pass
// over the result.
Tensor conv2d_add(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Conv2dOptions& options, const Tensor& residual);

namespace ref {
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});
}  // namespace ref

}  // namespace sd
