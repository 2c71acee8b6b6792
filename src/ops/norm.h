// Normalisations, as torch.nn.functional.group_norm / layer_norm. f32 in, f32 out.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace sd {

// x: [B, C, ...]; statistics over each group of C / groups channels and all spatial
// positions; weight, bias: undefined or [C]. With silu = true, SiLU is applied to the
// result in the same pass (the UNet's and VAE's GroupNorm -> SiLU).
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  float eps = 1e-5f, bool silu = false);
// The same on a tensor nobody else holds (a temporary, or one moved in): the result is
// written over x's memory when x is contiguous and its storage unshared, so a large
// activation is not doubled.
Tensor group_norm(Tensor&& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  float eps = 1e-5f, bool silu = false);

// Normalises over the last dimension; weight, bias: undefined or [x.size(-1)].
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

// Root-mean-square norm over the last dimension (T5's layer norm, FLUX's QK norm):
// x / sqrt(mean(x^2) + eps) * weight; weight: undefined or [x.size(-1)]. Rows may be strided
// (a head's slice of a fused qkv projection); the result is contiguous.
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps = 1e-6f);

// RMS norm over the channels of each pixel: x [N, C, ...] contiguous, out[n, c, p] =
// x[n, c, p] / sqrt(mean_c(x[n, :, p]^2) + eps) * weight[c] (weight: undefined or [C]), then
// SiLU when `silu` (the Wan VAE's RMS_norm and its SiLU), without moving the channels last.
Tensor rms_norm_channels(const Tensor& x, const Tensor& weight, float eps, bool silu = false);

namespace ref {
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  float eps = 1e-5f, bool silu = false);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps = 1e-6f);
}  // namespace ref

}  // namespace sd
