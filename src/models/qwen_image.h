// The Qwen-Image diffusion transformer (Qwen-Image, Qwen-Image-Edit; Edit-2511's zero_cond_t),
// as diffusers' QwenImageTransformer2DModel and stable-diffusion.cpp's qwen_image.hpp, with
// the diffusers tensor names:
//   img_in (2x2 patches of the latent, channels first; reference latents' patches follow the
//   image's), txt_norm (RMS) + txt_in (the Qwen2.5-VL states, 3584 wide), time_text_embed
//   (sinusoid of t, 256 wide, cos first -> timestep_embedder.linear_1 -> SiLU -> linear_2)
//   -> transformer_blocks.N (dual stream: separate img_* / txt_* weights, one joint attention
//   over [text, image] tokens) -> norm_out (LayerNorm without affine, (1 + scale) then shift:
//   scale is the first chunk) -> proj_out.
// A block: img_mod.1 / txt_mod.1 give six chunks of SiLU(t_emb) (shift, scale, gate for the
// attention, then for the MLP); LayerNorm eps 1e-6 without affine; attention with separate
// q/k/v projections (to_q.. for the image, add_q_proj.. for the text), RMS-normed q / k per
// head (norm_q / norm_k, norm_added_q / norm_added_k), 3-axis RoPE (axes 16, 56, 56, theta
// 10000) applied inside the attention kernel, outputs through to_out.0 / to_add_out; a
// tanh-GELU MLP (net.0.proj, net.2) four times as wide.
// zero_cond_t (Edit-2511, marked by a `__index_timestep_zero__` tensor): the reference
// latents' tokens are modulated by the image weights applied to the embedding of t = 0, the
// noised image's and the text's by that of t (the reference's modulate_index).
// Qwen-Image-Layered (marked by time_text_embed.addition_t_embedding, an nn.Embedding(2, C)):
// the latent has a time axis, one frame per RGBA layer (and the composite first), each frame's
// patches numbered with its frame index; t_emb gains the embedding's row 0 (the reference's
// addition_t_cond, always 0 there); its reference latents are numbered -1, -2, ...
// Widths and depth are read from the weights.
#pragma once

#include <utility>
#include <vector>

#include "nn/dit_blocks.h"
#include "nn/layers.h"
#include "nn/rope.h"

namespace sd {

struct QwenImageConfig {
    int64_t patch = 2;
    int64_t in_channels = 16;  // latent channels (img_in takes in_channels * patch^2)
    int64_t out_channels = 16;
    int64_t hidden = 3072;
    int64_t heads = 24;
    int64_t head_dim = 128;
    int64_t context_dim = 3584;  // txt_in's input (Qwen2.5-VL-7B)
    int64_t mlp_hidden = 12288;
    int depth = 60;
    bool zero_cond_t = false;        // Edit-2511: reference tokens modulated at t = 0
    bool additional_t_cond = false;  // Layered: addition_t_embedding's row 0 added to t_emb
    float theta = 10000.0f;
    std::vector<int> axes_dim = {16, 56, 56};
};

// One stream's half of a block: the image's (img_mod, to_q.., norm_q/k, to_out.0, img_mlp) or
// the text's (txt_mod, add_q_proj.., norm_added_q/k, to_add_out, txt_mlp).
struct QwenImageStream {
    Linear mod;             // *_mod.1: 6 x hidden
    Linear q, k, v;         // per-stream projections
    Tensor norm_q, norm_k;  // RMS scales over a head, f32
    Linear out;
    Linear mlp_in, mlp_out;  // *_mlp.net.0.proj, *_mlp.net.2
};

struct QwenImageBlock {
    QwenImageStream img, txt;
};

class QwenImageModel {
  public:
    // w: the diffusion model's prefix; throws listing every missing or mis-shaped tensor.
    // zero_cond_t: Edit-2511's switch forced on (the reference's --model-args
    // qwen_image_zero_cond_t=true); the marker tensor turns it on too.
    static QwenImageModel load(const Weights& w, bool zero_cond_t = false);

    // x: [1, C, H, W] latent (padded to whole patches inside) or [1, C, T, H, W] (Layered: T
    // frames, the tokens frame by frame), timesteps: f32 [1], the flow denoiser's
    // t = sigma * 1000 (the network embeds it as given), context: the text encoder's states
    // [1, L, context_dim], refs: reference latents [1, C, h, w] (Edit, Layered), their tokens
    // after the image's, numbered by ref_index: Increase 1, 2, ..., Decrease -1, -2, ... with
    // centred grids, Fixed all at index 1 side by side. Returns the velocity, shaped as x.
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                   const std::vector<Tensor>& refs = {},
                   RefIndexMode ref_index = RefIndexMode::Fixed) const;

    const QwenImageConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    // The image stream's modulation: `main` for its first `n_main` tokens, `ref` (zero_cond_t:
    // the t = 0 vector; undefined otherwise) for the reference tokens after them.
    struct ImageModulation {
        Tensor main, ref;
        int64_t n_main = 0;
    };
    Tensor image_norm(const Tensor& img, const ImageModulation& m, int64_t chunk) const;
    Tensor image_gated(const Tensor& img, const Tensor& y, const ImageModulation& m,
                       int64_t chunk) const;
    std::pair<Tensor, Tensor> attention(const QwenImageBlock& b, const Tensor& img,
                                        const Tensor& txt, const Tensor& rope) const;
    void block(const QwenImageBlock& b, Tensor& img, Tensor& txt, const Tensor& t_emb,
               const Tensor& t0_emb, int64_t n_img, const Tensor& rope) const;
    Tensor time_embedding(const Tensor& timesteps) const;

    QwenImageConfig config_;
    Linear img_in, txt_in;
    Tensor txt_norm;            // RMS scale [context_dim], f32
    MlpEmbedder time_embedder;  // time_text_embed.timestep_embedder.linear_1, linear_2
    Tensor addition_t;          // Layered: addition_t_embedding's row 0 [1, hidden], f32
    std::vector<QwenImageBlock> blocks;
    Linear norm_out, proj_out;  // norm_out.linear: scale, shift
    WeightPages pages_;
};

// The positions of Qwen-Image's tokens (rows of 3 values), as the reference's
// gen_qwen_image_ids: `txt` text tokens at (s, s, s) for s = m, m + 1, ... (m = max(h, w) / 2,
// diffusers' QwenEmbedRope too), each of the `frames` frames' h x w image patches at
// (frame, row - h / 2, col - w / 2) (centred, "scale_rope"; an image is frame 0), then the
// reference latents' patches (append_reference_positions; Increase from 1, Decrease from -1,
// centred unless Fixed). Older reference versions started the text at max(h, w) with a step of
// txt / (txt - 1); the version with Qwen-Image-Layered (the pinned one) numbers it as here, and
// the reference cases agree (63.1 / 63.3 dB against 62.7 / 63.2 dB the older way).
std::vector<float> qwen_image_positions(int64_t txt, int64_t frames, int64_t h, int64_t w,
                                        int64_t patch,
                                        const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                        RefIndexMode ref_index);

}  // namespace sd
