// The Wan 2.1 / 2.2 video diffusion transformer (text-, image- and text-image-to-video; WanModel of
// the original Wan code and stable-diffusion.cpp's wan.hpp), with the original tensor names:
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
// Image-to-video adds img_emb (the first frame's CLIP-vision states as image tokens) and an
// image half to every cross-attention; its input holds the mask and the first frame's latent.
// VACE (control videos) adds vace_patch_embedding (a 1x2x2 Conv3d of the control context: the
// control clip's two latents and its mask) and vace_blocks.N, Wan blocks whose stream starts as
// before_proj(context tokens) + the input tokens (block 0) and whose after_proj is a hint, added
// times the strength to the main stream after main block N * (layers / vace blocks).
// Widths and depth are read from the weights; heads are 128 wide (every released Wan).
#pragma once

#include <optional>
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
    bool image_input = false;      // image-to-video: img_emb and the image cross-attention
    int64_t clip_dim = 1280;       // the CLIP-vision states' width (ViT-H)
    int64_t vace_in_channels = 0;  // VACE: the control context's channels (96); 0: none
    int vace_layers = 0;           // VACE blocks
    float eps = 1e-6f;
    float theta = 10000.0f;
    std::vector<int> axes_dim = {44, 42, 42};  // frame, row, column
};

struct WanAttention {
    Linear q, k, v, o;
    Tensor norm_q, norm_k;  // RMS scales over the whole width, f32
    // Image-to-video's cross-attention reads the image tokens with keys and values of their own
    // (k_img, v_img, norm_k_img); the two attentions' outputs add before `o`.
    std::optional<Linear> k_img, v_img;
    Tensor norm_k_img;
};

// Image-to-video's img_emb (MLPProj): the CLIP-vision states [1, 257, 1280] of the first frame
// (FLF2V: of the first and last, 514, plus emb_pos) -> image tokens [1, n, dim]:
// LayerNorm, Linear, GELU (tanh), Linear, LayerNorm.
struct WanImageEmbedding {
    LayerNorm norm_in, norm_out;  // proj.0, proj.4
    Linear fc1, fc2;              // proj.1, proj.3
    Tensor emb_pos;               // FLF2V's [1, 514, 1280]; undefined otherwise

    static WanImageEmbedding load(const Weights& w, int64_t clip_dim, int64_t dim);
    Tensor forward(const Tensor& clip_states) const;
};

struct WanBlock {
    Tensor modulation;  // [6 dim], f32: added to e0
    WanAttention self_attn, cross_attn;
    LayerNorm norm3;
    Linear ffn_in, ffn_out;  // ffn.0, ffn.2
};

// A VACE block: a Wan block on the control stream, whose after_proj is the hint.
struct WanVaceBlock {
    WanBlock block;
    std::optional<Linear> before_proj;  // block 0's: the context tokens into the stream
    Linear after_proj;
};

// A VACE model's control input: the context [1, vace_in_channels, T, H, W] (the latent grid)
// and how strongly its hints steer.
struct WanVaceInput {
    Tensor context;
    float strength = 1.0f;
};

class WanModel {
  public:
    // w = "model.diffusion_model."; throws listing every missing or mis-shaped tensor.
    static WanModel load(const Weights& w);

    // x: the latent video [1, C, T, H, W] (H and W even; image-to-video's C holds the noisy
    // latent, the 4-channel frame mask and the conditioning video's latent), timesteps: f32 [1]
    // or [T] (one per frame, Wan2.2 TI2V's), the flow denoiser's t = sigma * 1000, context: the
    // text encoder's states [1, L, text_dim], clip_states: image-to-video's CLIP-vision states
    // [1, n, clip_dim] (required by such a model, unused by others), vace: a VACE model's
    // control input (required by such a model).
    // Returns the flow velocity [1, C_out, T, H, W].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                   const Tensor& clip_states = {}, const WanVaceInput& vace = {}) const;

    const WanConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor self_attention(const WanAttention& a, const Tensor& x, const Tensor& rope) const;
    Tensor cross_attention(const WanAttention& a, const Tensor& x, const Tensor& context,
                           const Tensor& image) const;
    Tensor block(const WanBlock& b, const Tensor& x, const Tensor& e0, const Tensor& context,
                 const Tensor& image, const Tensor& rope) const;
    // The VACE block that follows main block `i`, or nullptr.
    const WanVaceBlock* vace_after(size_t i) const;

    WanConfig config_;
    Linear patch_embedding;  // the Conv3d's weight as [dim, C * 2 * 2]
    Linear text_in, text_out, time_projection;
    MlpEmbedder time_embedding;  // time_embedding.0, .2
    std::optional<WanImageEmbedding> img_emb;
    std::vector<WanBlock> blocks;
    Linear vace_patch_embedding;  // VACE: the Conv3d's weight as [dim, vace_in_channels * 2 * 2]
    std::vector<WanVaceBlock> vace_blocks;
    Tensor head_modulation;  // [2 dim], f32
    Linear head;
    WeightPages pages_;
};

// The positions (frame, row, column) of a frames x rows x cols token grid, in token order.
std::vector<float> wan_positions(int64_t frames, int64_t rows, int64_t cols);

}  // namespace sd
