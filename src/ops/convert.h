// Dtype conversion of whole tensors: any dtype to f32 (dequantization) and f32 to any
// dtype (quantization, rows of whole blocks). Output is contiguous.
#pragma once

#include "tensor/tensor.h"

namespace sd {

Tensor convert(const Tensor& x, DType dtype);

namespace ref {
Tensor convert(const Tensor& x, DType dtype);
}  // namespace ref

}  // namespace sd
