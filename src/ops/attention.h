// Scaled dot-product attention, as torch.nn.functional.scaled_dot_product_attention.
// The kernel is flash-style: it walks the keys in tiles with an online softmax, so the
// full [Lq, Lk] score matrix is never stored.
#pragma once

#include "tensor/tensor.h"

namespace sd {

struct AttentionOptions {
    float scale = 0.0f;   // 0: 1 / sqrt(head_dim)
    bool causal = false;  // query i sees keys 0..i (+ Lk - Lq when Lk > Lq)
    // Rotary position embedding applied to q and k as they are loaded (FLUX's RoPE; no
    // rotated copies): undefined, or f32 [L, D/2, 2] with L >= Lq, Lk holding (cos, sin) of
    // each position and pair. Pair p of row i, (x[2p], x[2p+1]), becomes
    // (c x[2p] - s x[2p+1], s x[2p] + c x[2p+1]) with (c, s) = rope[i][p].
    Tensor rope;
};

// q: f32 [B, H, Lq, D], k: [B, H, Lk, D], v: [B, H, Lk, Dv] (any strides, each row of D
// values contiguous or not); mask: undefined, or f32 added to the scores, broadcastable
// to [B, H, Lq, Lk] (-inf masks a key). Returns f32 [B, H, Lq, Dv], contiguous. A query
// whose keys are all masked gets zeros.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask = {}, const AttentionOptions& options = {});

namespace ref {
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask = {}, const AttentionOptions& options = {});
}  // namespace ref

}  // namespace sd
