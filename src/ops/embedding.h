// Row lookup, as torch.nn.functional.embedding: out[..., :] = weight[ids[...], :].
#pragma once

#include "tensor/tensor.h"

namespace sd {

// weight: [V, D] of any dtype (rows contiguous); ids: i32 of any shape, each in [0, V).
// Returns f32 [*ids.shape, D]. An id out of range is an error naming it.
Tensor embedding(const Tensor& weight, const Tensor& ids);

namespace ref {
Tensor embedding(const Tensor& weight, const Tensor& ids);
}  // namespace ref

}  // namespace sd
