// Reductions of f32 tensors along one dimension.
#pragma once

#include "tensor/tensor.h"

namespace sd {

Tensor sum(const Tensor& x, int dim, bool keepdim = false);
Tensor mean(const Tensor& x, int dim, bool keepdim = false);

namespace ref {
Tensor sum(const Tensor& x, int dim, bool keepdim = false);
Tensor mean(const Tensor& x, int dim, bool keepdim = false);
}  // namespace ref

}  // namespace sd
