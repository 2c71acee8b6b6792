// The pieces the diffusion transformers' blocks (FLUX, SD3's MMDiT) share: adaLN
// modulation by chunks of a modulation vector, gated residuals, the heads of a fused qkv
// projection as views, and attention over [1, L, H, D] token sequences.
#pragma once

#include "ops/ops.h"

namespace sd {

// (1 + scale) * LayerNorm(x) + shift (no affine of its own, eps 1e-6) with (shift, scale) =
// chunks i, i + 1 of `mod` [1, k hidden]: one layer norm with that weight and bias.
Tensor modulated_norm(const Tensor& x, const Tensor& mod, int64_t i, int64_t hidden);

// x + gate * y with gate = chunk i of `mod` [1, k hidden].
Tensor gated(const Tensor& x, const Tensor& y, const Tensor& mod, int64_t i, int64_t hidden);

// The heads of part `i` (0 q, 1 k, 2 v) of a fused projection [1, L, >= 3 hidden]: a
// [1, L, H, D] view.
Tensor head_view(const Tensor& qkv, int i, int64_t heads, int64_t head_dim);

// Attention of q, k, v [1, L, H, D] -> [1, Lq, H D]; `rope` (undefined, or FLUX's table,
// AttentionOptions::rope) is applied as q and k load.
Tensor dit_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& rope = {});

}  // namespace sd
