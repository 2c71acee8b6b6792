// The FLUX.2 diffusion transformer (klein 4B / 9B and dev), as BFL's flux2 model and
// stable-diffusion.cpp's flux.hpp run it for FLUX.2, with the BFL tensor names:
//   img_in (the latent's 128 channels a token: 2x2 patches of the VAE's 32 channels, made
//   by the latent format), txt_in (the LLM's concatenated hidden states),
//   vec = time_in(t) [+ guidance_in(g), dev] -> one modulation for every block:
//   double_stream_modulation_img / _txt (6 x width) and single_stream_modulation (3 x width)
//   -> double_blocks.N -> single_blocks.N -> final_layer. No biases anywhere; the MLPs are
//   SiLU-gated (their input projections twice the MLP width).
// Attention uses 4-axis RoPE (axes 32 x 4, theta 2000; text ids (0, 0, 0, i), image ids
// (0, row, col, 0), reference latents (10 k, row, col, 0) for the k-th) with RMS-normed q / k.
// Widths, depths, heads and the context width are read from the weights.
#pragma once

#include <utility>
#include <vector>

#include "nn/dit_blocks.h"
#include "nn/layers.h"
#include "nn/rope.h"

namespace sd {

struct Flux2Config {
    int64_t in_channels = 128;  // img_in's input and final_layer's output
    int64_t hidden = 3072;
    int64_t heads = 24;
    int64_t head_dim = 128;
    int64_t context_dim = 7680;  // txt_in's input: 3 hidden states of Qwen3-4B
    int64_t mlp_hidden = 9216;   // the gated MLP's inner width
    int depth = 5;
    int depth_single = 20;
    bool guidance_embed = false;  // dev has guidance_in; klein has none
    float theta = 2000.0f;
    std::vector<int> axes_dim = {32, 32, 32, 32};
    float ref_index_scale = 10.0f;  // reference k sits at index 10 k
};

struct Flux2Attention {  // qkv, QK RMS norm scales, proj; no biases
    Linear qkv, proj;
    Tensor query_scale, key_scale;
};

struct Flux2DoubleBlock {
    Flux2Attention img_attn, txt_attn;
    Linear img_mlp_0, img_mlp_2, txt_mlp_0, txt_mlp_2;
};

struct Flux2SingleBlock {
    Linear linear1;  // qkv and the gated MLP's input side by side
    Linear linear2;  // attention output and MLP activation side by side
    Tensor query_scale, key_scale;
};

// The shared modulations of one forward: SiLU(vec) through each modulation's linear.
struct Flux2Modulation {
    Tensor svec;      // SiLU(vec) [1, hidden], the final layer's input
    Tensor img, txt;  // [1, 6 hidden]: shift, scale, gate for attention, then for the MLP
    Tensor single;    // [1, 3 hidden]
};

class Flux2Model {
  public:
    // w = "model.diffusion_model."; throws listing every missing or mis-shaped tensor.
    static Flux2Model load(const Weights& w);

    // x: [1, in_channels, h, w] (the patched latent), timesteps: f32 [1] in [0, 1] (times
    // 1000 inside), context: [1, Lt, context_dim], guidance: dev's distilled guidance (unused
    // by klein), refs: reference latents [1, in_channels, h', w'] (any size) as extra tokens.
    // Returns the velocity [1, in_channels, h, w].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context, float guidance,
                   const std::vector<Tensor>& refs = {}) const;

    const Flux2Config& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Flux2Modulation modulation(const Tensor& timesteps, float guidance) const;
    void double_block(const Flux2DoubleBlock& b, Tensor& img, Tensor& txt,
                      const Flux2Modulation& mod, const Tensor& rope) const;
    Tensor single_block(const Flux2SingleBlock& b, const Tensor& x, const Tensor& mod,
                        const Tensor& rope) const;
    Tensor mlp(const Linear& in, const Linear& out, const Tensor& x) const;

    Flux2Config config_;
    Linear img_in, txt_in;
    MlpEmbedder time_in, guidance_in;
    Linear double_mod_img, double_mod_txt, single_mod;
    std::vector<Flux2DoubleBlock> double_blocks;
    std::vector<Flux2SingleBlock> single_blocks;
    Linear final_adaln, final_linear;
    WeightPages pages_;
};

// The positions of FLUX.2's tokens, rows of 4 values (the reference's gen_flux_ids with the
// text on axis 3 and references numbered up): `txt` text tokens at (0, 0, 0, i), the h x w
// image tokens at (0, row, col, 0), then each reference (refs_hw: its height and width in
// tokens) at (index_scale k, row, col, 0) for k = 1, 2, ...
std::vector<float> flux2_positions(int64_t txt, int64_t h, int64_t w,
                                   const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                   float index_scale);

}  // namespace sd
