// The Wan 2.1 video diffusion transformer (text-to-video; WanModel of the original Wan code and
// stable-diffusion.cpp's wan.hpp), with the original tensor names:
//   patch_embedding (a 1x2x2 Conv3d: each frame's 2x2 patches, channels first, frame by frame,
//   then rows, then columns), text_embedding.{0,2} (GELU-tanh MLP of the UMT5 states),
//   time_embedding.{0,2} (sinusoid, cos first, 256 wide -> SiLU MLP: e) and
//   time_projection.1 (SiLU -> 6 modulation vectors: e0);
//   blocks.N: self-attention on norm1(x) (LayerNorm without affine) modulated by
//   (shift, scale) and gated, q and k RMS-normed over the whole width and rotated by a 3-axis
//   RoPE (frame, row, column: 44/42/42 of a 128-wide head, theta 10000, interleaved pairs);
//   cross-attention from norm3(x) (LayerNorm with affine) to the text (q, k RMS-normed); a
//   GELU-tanh feed-forward on modulated norm2(x), gated. Each block adds its `modulation`
//   [1, 6, dim] to e0: shift, scale, gate of attention, then of the feed-forward;
//   head: LayerNorm modulated by e + head.modulation (shift, scale), head.head, and the tokens
//   back to frames with the channels innermost in each patch.
// Widths and depth are read from the weights; heads are 128 wide (every released Wan).
#pragma once

#include <vector>

#include "nn/dit_blocks.h"
#include "nn/layers.h"

namespace sd {

struct WanConfig {
    int64_t in_channels = 16;
    int64_t out_channels = 16;
    int64_t dim = 1536;
    int64_t heads = 12;
    int64_t head_dim = 128;
    int64_t ffn = 8960;
    int64_t text_dim = 4096;  // UMT5-XXL's width
    int64_t freq_dim = 256;   // the timestep sinusoid's width
    int layers = 30;
    float eps = 1e-6f;
    float theta = 10000.0f;
    std::vector<int> axes_dim = {44, 42, 42};  // frame, row, column
};

struct WanAttention {
    Linear q, k, v, o;
    Tensor norm_q, norm_k;  // RMS scales over the whole width, f32
};

struct WanBlock {
    Tensor modulation;  // [6 dim], f32: added to e0
    WanAttention self_attn, cross_attn;
    LayerNorm norm3;
    Linear ffn_in, ffn_out;  // ffn.0, ffn.2
};

class WanModel {
  public:
    // w = "model.diffusion_model."; throws listing every missing or mis-shaped tensor, or
    // naming a variant this build does not run (image-to-video's img_emb).
    static WanModel load(const Weights& w);

    // x: the latent video [1, C, T, H, W] (H and W even), timesteps: f32 [1], the flow
    // denoiser's t = sigma * 1000, context: the text encoder's states [1, L, text_dim].
    // Returns the flow velocity [1, C, T, H, W].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context) const;

    const WanConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor self_attention(const WanAttention& a, const Tensor& x, const Tensor& rope) const;
    Tensor cross_attention(const WanAttention& a, const Tensor& x, const Tensor& context) const;
    Tensor block(const WanBlock& b, const Tensor& x, const Tensor& e0, const Tensor& context,
                 const Tensor& rope) const;

    WanConfig config_;
    Linear patch_embedding;  // the Conv3d's weight as [dim, C * 2 * 2]
    Linear text_in, text_out, time_projection;
    MlpEmbedder time_embedding;  // time_embedding.0, .2
    std::vector<WanBlock> blocks;
    Tensor head_modulation;  // [2 dim], f32
    Linear head;
    WeightPages pages_;
};

// The positions (frame, row, column) of a frames x rows x cols token grid, in token order.
std::vector<float> wan_positions(int64_t frames, int64_t rows, int64_t cols);

}  // namespace sd
