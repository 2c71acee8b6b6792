// The MMDiT of Stable Diffusion 3 / 3.5 (Stability's sd3 mmdit.py, stable-diffusion.cpp's
// mmdit.hpp), with the checkpoint's tensor names:
//   x_embedder (2x2 patch convolution) + pos_embed (a learned max x max grid, its centre
//   cropped to the latent) -> image tokens; context_embedder(T5 + CLIP states) -> text tokens;
//   c = t_embedder(t) + y_embedder(pooled CLIP) drives every adaLN modulation;
//   joint_blocks.N.{context_block, x_block}: each stream LayerNorm + modulation -> qkv, one
//   attention over text then image tokens, gated proj and MLP residuals; the last context
//   block is pre-only (no proj, MLP: the text stream ends there) -> final_layer.
// Read from the weights: width, depth, patch size, position grid, context width, SD3.5's
// RMS qk-norm (attn.ln_q / ln_k) and MMDiT-X blocks (SD3.5 medium: x_block.attn2, a second
// self-attention over the image tokens alone, with its own 3 modulation chunks).
#pragma once

#include <optional>
#include <vector>

#include "nn/dit_blocks.h"
#include "nn/layers.h"

namespace sd {

struct MMDiTConfig {
    int64_t hidden = 1536;
    int64_t heads = 24;
    int64_t head_dim = 64;
    int64_t in_channels = 16;
    int64_t out_channels = 16;
    int64_t patch = 2;
    int64_t pos_embed_max = 192;  // pos_embed holds max x max positions
    int64_t context_dim = 4096;
    int64_t adm_dim = 2048;  // y_embedder's input: CLIP-L + bigG pooled
    int64_t mlp_hidden = 6144;
    int depth = 24;
    bool qk_norm = false;
    int dual_attention_blocks = 0;  // MMDiT-X blocks (x_block.attn2)
};

struct MMDiTAttention {
    Linear qkv;
    Linear proj;        // not in a pre-only block
    Tensor ln_q, ln_k;  // RMS-norm weights [head_dim] (qk-norm) or undefined
};

// One stream of a joint block (the reference's DismantledBlock).
struct MMDiTStream {
    Linear adaln;  // adaLN_modulation.1: 6 (2 pre-only, 9 with attn2) chunks of hidden
    MMDiTAttention attn;
    std::optional<MMDiTAttention> attn2;
    Linear fc1, fc2;
    bool pre_only = false;
};

struct MMDiTJointBlock {
    MMDiTStream context, x;
};

class MMDiT {
  public:
    // w = "model.diffusion_model."; throws listing every missing or mis-shaped tensor.
    static MMDiT load(const Weights& w);

    // x: [1, C, H, W] latent (H, W multiples of the patch), timesteps: f32 [1] (sigma * 1000),
    // context: [1, L, context_dim], y: [1, adm_dim]. skip_layers: joint blocks left out
    // (skip-layer guidance). Returns the velocity [1, C, H, W].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context, const Tensor& y,
                   const std::vector<int>& skip_layers = {}) const;

    const MMDiTConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    void joint_block(const MMDiTJointBlock& b, Tensor& context, Tensor& x, const Tensor& c) const;
    Tensor qk(const Tensor& qkv, int part, const Tensor& norm) const;
    Tensor cropped_pos_embed(int64_t h, int64_t w) const;

    MMDiTConfig config_;
    Conv2d x_embedder;
    Tensor pos_embed;  // [1, max * max, hidden]
    MlpEmbedder t_embedder, y_embedder;
    Linear context_embedder;
    std::vector<MMDiTJointBlock> blocks_;
    Linear final_adaln, final_linear;
    WeightPages pages_;
};

// [1, h w, p p C] in the (row, col, channel) order of each patch -> [1, C, h p, w p].
Tensor mmdit_unpatchify(const Tensor& x, int64_t channels, int64_t h, int64_t w, int64_t p);

}  // namespace sd
