// The weight change a LoRA module stands for, as the reference program computes it:
//   LoRA    scale * up @ (mid) @ down, scale = .scale, or alpha / rank (rank: down's rows)
//   LoHa    scale * (w1_a @ w1_b) * (w2_a @ w2_b) (each pair through its Tucker core
//           hada_t1 / hada_t2 when present), scale = alpha / rank (rank: w1_b's rows)
//   LoKr    scale * kron(w1, w2), w1 = lokr_w1 or w1_a @ w1_b, w2 = lokr_w2, w2_a @ w2_b or
//           its Tucker form through lokr_t2; scale = alpha / rank (rank: w2_b's, else w1_b's
//           rows), 1 when the rank is 1
//   diff    the stored difference
// each times the user's multiplier. DoRA (dora_scale, LoRA kind only) re-scales the patched
// weight's norms to the stored magnitudes, then takes multiplier * (that - W): per output row
// when dora_scale has one value a row (PEFT), per input column otherwise (LyCORIS).
#pragma once

#include "adapters/lora_file.h"
#include "nn/weight_patch.h"

namespace sd {

// The module's rank-scale (without the multiplier) for LoRA kind.
float lora_scale(const LoraModule& m);

// The delta of `m` for a weight of `shape` (f32, that shape), or an sd::Error naming the
// module when its sizes do not fit. `base` (the weight, any dtype) is read for DoRA only.
Tensor lora_delta(const LoraModule& m, const Shape& shape, float multiplier, const Tensor& base);

// The low-rank term of a LoRA-kind module without DoRA, for a layer weight of `shape` (2-d:
// Linear, 4-d: Conv2d), checked against it.
LowRankTerm lora_term(const LoraModule& m, const Shape& shape, float multiplier);

// weight + scale * up @ down in the weight's dtype, row by row in one pass over the weight
// (the merge of a plain LoRA module): weight [rows, ...] contiguous of any dtype whose rows
// are whole blocks, down [r, cols] and up [rows, r] f32 as lora_term gives them.
Tensor merge_low_rank(const Tensor& weight, const LowRankTerm& term);

// torch.kron for a 2-d `a` and a 2-d or 4-d `b`: [a0*b0, a1*b1, (kh, kw)].
Tensor kron(const Tensor& a, const Tensor& b);

}  // namespace sd
