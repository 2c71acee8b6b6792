// Importance-weighted quantization (an imatrix in -M convert): the k-quant and iq4 scale
// searches of the reference engine's quantize_row_*_impl with quant_weights, which minimise
// sum_j w_j * (x_j - q_j)^2 with w_j = importance_j * sqrt(sigma^2 + x_j^2), sigma^2 the
// block's mean square (times 2 for the 32-value sub-blocks, as the reference does).
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace sd {

// q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl and iq4_xs.
bool has_weighted_quantization(DType type);

// Quantizes one row of n values (a multiple of block_size(type)); importance holds n
// non-negative column weights (any scale). Types without a weighted search, or a null
// importance, use quantize_row.
void quantize_row_weighted(DType type, const float* src, void* dst, int64_t n,
                           const float* importance);

}  // namespace sd
