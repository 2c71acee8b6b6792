// What CLIP's text and image towers share (transformers' modeling_clip.py): the encoder layer
// (pre-norm self-attention, then a pre-norm two-layer MLP with GELU or CLIP's quick GELU, each
// added to its input), the stack of them under "encoder.layers.N.", and the image preprocessing
// stable-diffusion.cpp gives every CLIP-style vision tower (clip_preprocess).
#pragma once

#include <vector>

#include "nn/layers.h"

namespace sd {

// transformers' CLIPEncoderLayer: layer_norm1, self_attn.{q,k,v,out}_proj, layer_norm2,
// mlp.fc1, mlp.fc2 (all with biases, eps 1e-5).
struct ClipEncoderLayer {
    LayerNorm layer_norm1, layer_norm2;
    Linear q_proj, k_proj, v_proj, out_proj;
    Linear fc1, fc2;

    // `w` = "...encoder.layers.N.".
    static ClipEncoderLayer load(const Weights& w, int64_t hidden, int64_t intermediate);
    // x: f32 [B, L, hidden] -> [B, L, hidden]; `causal` for the text tower.
    Tensor forward(const Tensor& x, int64_t heads, bool quick_gelu, bool causal) const;
};

// transformers' CLIPEncoder: the numbered layers, run in order.
struct ClipEncoder {
    std::vector<ClipEncoderLayer> layers;
    int64_t heads = 12;
    bool quick_gelu = true;  // OpenAI's CLIP; OpenCLIP's towers use exact GELU
    bool causal = false;

    // `w` = "...encoder."; `depth` layers "layers.0." ... (see Weights::count_numbered).
    static ClipEncoder load(const Weights& w, int64_t depth, int64_t hidden, int64_t intermediate,
                            int64_t heads, bool quick_gelu, bool causal);
    // The first `count` layers (0 .. depth) on x [B, L, hidden].
    Tensor forward(const Tensor& x, int64_t count) const;
    int64_t depth() const { return static_cast<int64_t>(layers.size()); }
};

// CLIP's image normalisation (OpenAI's mean and std, which OpenCLIP's ViT-H and bigG share).
inline constexpr float kClipImageMean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
inline constexpr float kClipImageStd[3] = {0.26862954f, 0.26130258f, 0.27577711f};

// stable-diffusion.cpp's clip_preprocess: image f32 [1, 3, H, W] in [0, 1] (an 8-bit image's
// value / 255) scaled by nearest neighbour (source index = dst * in / out) by the larger of
// out_h / H and out_w / W (float, sides truncated, never below the crop), centre-cropped to
// out_h x out_w (offsets floored), clamped to [0, 1] and normalised: (x - mean) / std.
// Returns f32 [1, 3, out_h, out_w]. Throws naming `model` on another shape or a bad size.
Tensor clip_image_preprocess(const Tensor& image, int64_t out_h, int64_t out_w,
                             const char* model = "CLIP vision encoder");

}  // namespace sd
