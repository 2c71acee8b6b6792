// Resizing the last two dims of f32 [..., H, W], as stable-diffusion.cpp's
// sd::ops::interpolate (align_corners false): nearest (source = dst * in / out), nearest-
// exact (the pixel whose centre is nearest), and the separable filters bilinear, bicubic
// (a = -0.75, as torch) and Lanczos-3 over half-pixel centres, indices clamped at the
// borders; `antialias` widens the filter by the downscaling factor and normalises its
// weights (Lanczos always normalises). Filters accumulate in double.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace sd {

enum class InterpolateMode { Nearest, NearestExact, Bilinear, Bicubic, Lanczos };

Tensor interpolate(const Tensor& x, int64_t out_h, int64_t out_w, InterpolateMode mode,
                   bool antialias = false);

}  // namespace sd
