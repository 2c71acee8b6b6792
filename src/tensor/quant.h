// Conversion of every dtype to and from f32, row by row, in GGUF's exact block layouts.
//
// dequantize_row / quantize_row pick the fastest path for this CPU (active_isa());
// the ref:: versions are the plain C++ specification that the fast paths must equal
// bit for bit. `n` is a count of values and must be a multiple of block_size(type).
//
// Quantization follows the reference engine: f16, bf16, q4_0, q4_1, q5_0, q5_1 and q8_0
// give byte-identical blocks; the k-quants and iq4 types use the same search for scales
// (error within 2% of the reference's).
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace sd {

void dequantize_row(DType type, const void* src, float* dst, int64_t n);
void quantize_row(DType type, const float* src, void* dst, int64_t n);

namespace ref {
void dequantize_row(DType type, const void* src, float* dst, int64_t n);
void quantize_row(DType type, const float* src, void* dst, int64_t n);
}  // namespace ref

}  // namespace sd
