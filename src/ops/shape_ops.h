// Operations that move values without arithmetic. (Views: permute, transpose, reshape,
// narrow ... are Tensor methods; these produce new tensors or lists of views.)
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace sd {

// Joins tensors of one dtype (plain dtypes) along dim; other dims must agree.
Tensor concat(const std::vector<Tensor>& tensors, int dim);
// Copies src into dst (same shape; dst contiguous f32, e.g. a channel range of a buffer).
void copy_into(const Tensor& src, const Tensor& dst);

// Splits dim into `chunks` views, as torch.chunk (the last may be smaller).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim);
// Packed copy of a permuted view: permute(order).contiguous().
Tensor permute_copy(const Tensor& x, const std::vector<int>& order);
// Nearest-neighbour 2x upsampling of the last two dims, f32 [..., H, W] -> [..., 2H, 2W].
Tensor upsample_nearest2x(const Tensor& x);
// Constant padding of the last two dims of f32 [..., H, W], as F.pad(x, (left, right, top,
// bottom), value=value). Negative amounts crop.
Tensor pad2d(const Tensor& x, int64_t left, int64_t right, int64_t top, int64_t bottom,
             float value = 0.0f);
// Sinusoidal timestep embedding of LDM/diffusers: timesteps f32 [N] -> f32 [N, dim] =
// cat(cos(t * f), sin(t * f)) with f_i = exp(-ln(max_period) * i / half), half = dim / 2
// (zero column appended when dim is odd). flip_sin_to_cos = false puts sin first.
Tensor timestep_embedding(const Tensor& timesteps, int64_t dim, float max_period = 10000.0f,
                          bool flip_sin_to_cos = true);

namespace ref {
Tensor concat(const std::vector<Tensor>& tensors, int dim);
Tensor upsample_nearest2x(const Tensor& x);
Tensor pad2d(const Tensor& x, int64_t left, int64_t right, int64_t top, int64_t bottom,
             float value = 0.0f);
Tensor timestep_embedding(const Tensor& timesteps, int64_t dim, float max_period = 10000.0f,
                          bool flip_sin_to_cos = true);
}  // namespace ref

}  // namespace sd
