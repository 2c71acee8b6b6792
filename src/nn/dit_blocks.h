// The pieces the diffusion transformers (FLUX, SD3's MMDiT, Z-Image) share: the MLP embedders of
// their time and vector inputs, latents as patch tokens and back, adaLN modulation by chunks of
// a modulation vector, gated residuals, the heads of a fused qkv projection as views, and
// attention over [1, L, H, D] token sequences.
#pragma once

#include "nn/layers.h"
#include "ops/ops.h"

namespace sd {

// An MLP embedder: second(silu(first(x))). FLUX's time_in / vector_in (in_layer, out_layer),
// SD3's and Z-Image's t_embedder (mlp.0, mlp.2); each model binds its own names.
struct MlpEmbedder {
    Linear first, second;
    Tensor forward(const Tensor& x) const { return second.forward(silu(first.forward(x))); }
};

// How a p x p patch's values sit in its token: ChannelsFirst (c, py, px) as FLUX and SD3's
// reference code, ChannelsLast (py, px, c) as Z-Image's (the reference's patch_last = false).
enum class PatchLayout { ChannelsFirst, ChannelsLast };

// [1, C, H, W] -> [1, h w, C p p] tokens, H and W first padded with zeros to multiples of p (the
// reference's pad_and_patchify; h = ceil(H / p), w = ceil(W / p)).
Tensor patchify(const Tensor& x, int64_t p, PatchLayout layout);
// The inverse for a [1, h w, C p p] token sequence, cropped back to [1, C, H, W]
// (unpatchify_and_crop).
Tensor unpatchify(const Tensor& tokens, int64_t channels, int64_t H, int64_t W, int64_t p,
                  PatchLayout layout);

// (1 + scale) * LayerNorm(x) + shift (no affine of its own, eps 1e-6) with (shift, scale) =
// chunks i, i + 1 of `mod` [1, k hidden]: one layer norm with that weight and bias.
Tensor modulated_norm(const Tensor& x, const Tensor& mod, int64_t i, int64_t hidden);

// SiLU-gated halves of the last dimension: silu(first half) * second half (the reference's
// silu_act with the gate first; FLUX.2's MLPs, whose input projection is twice as wide).
Tensor silu_gated(const Tensor& x);

// x + gate * y with gate = chunk i of `mod` [1, k hidden].
Tensor gated(const Tensor& x, const Tensor& y, const Tensor& mod, int64_t i, int64_t hidden);

// The heads of part `i` (0 q, 1 k, 2 v) of a fused projection [1, L, >= 3 hidden]: a
// [1, L, H, D] view.
Tensor head_view(const Tensor& qkv, int i, int64_t heads, int64_t head_dim);

// Part `i` (0 q, 1 k, 2 v) of two streams' fused projections joined on the token axis, `a`'s
// tokens first: [1, La + Lb, H, D], each stream's heads RMS-normed by its own scale (eps
// 1e-6) where the scales are given (FLUX's double blocks: text, then image).
Tensor joint_heads(const Tensor& a_qkv, const Tensor& b_qkv, int i, int64_t heads, int64_t head_dim,
                   const Tensor& a_scale = {}, const Tensor& b_scale = {});

// Attention of q, k, v [1, L, H, D] -> [1, Lq, H D]; `rope` (undefined, or FLUX's table,
// AttentionOptions::rope) is applied as q and k load; `mask` (undefined, or f32 added to the
// scores, broadcast to [1, H, Lq, Lk]: -inf skips a key).
Tensor dit_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& rope = {},
                     const Tensor& mask = {});

}  // namespace sd
