// The FLUX.1 diffusion transformer (dev and schnell; Kontext's reference images as extra
// tokens), as BFL's flux/model.py Flux and stable-diffusion.cpp's flux.hpp, with the
// BFL/ComfyUI tensor names:
//   img_in (2x2 patches of the latent), txt_in (T5 states), vec = time_in(t) [+ guidance_in(g)]
//   + vector_in(CLIP pooled) -> double_blocks.N (separate img / txt weights, joint attention)
//   -> single_blocks.N (one stream: attention and MLP side by side) -> final_layer.
// Attention uses 3-axis RoPE (axes 16, 56, 56, theta 10000; text ids 0, image ids
// (index, row, col)) applied inside the attention kernel, and RMS-normed q / k.
// Widths and depths are read from the weights; dev (guidance_in) and schnell (none) too; Fill
// (384 inputs: latent, masked-image latent, 8x8 mask cells) and Canny / Depth (128: latent,
// control latent) read their extra channels patchified beside the latent's.
// Chroma is the schnell layout with `distilled_guidance_layer` (chroma_approximator.h) in place
// of time_in / vector_in and every block's modulation linear, and an optional attention mask
// over the text tokens. Chroma-Radiance (models/chroma_radiance.h) runs the same transformer
// between heads of its own (FluxHeads::None, transform()).
#pragma once

#include <memory>
#include <vector>

#include "models/chroma_approximator.h"
#include "nn/dit_blocks.h"
#include "nn/layers.h"
#include "nn/rope.h"

namespace sd {

struct FluxConfig {
    int64_t in_channels = 64;  // img_in's input: (latent + extra) channels * patch^2 (Fill 384,
                               // Canny / Depth 128)
    int64_t out_channels = 64;
    int64_t hidden = 3072;
    int64_t heads = 24;
    int64_t head_dim = 128;
    int64_t context_dim = 4096;  // txt_in's input (T5-XXL)
    int64_t vec_dim = 768;       // vector_in's input (CLIP-L pooled); 0 for Chroma
    int64_t mlp_hidden = 12288;
    int depth = 19;
    int depth_single = 38;
    bool guidance_embed = true;  // dev; schnell has no guidance_in
    bool chroma = false;         // distilled_guidance_layer: Chroma
    int64_t patch = 2;
    float theta = 10000.0f;
    std::vector<int> axes_dim = {16, 56, 56};
};

struct FluxSelfAttention {  // qkv, QK RMS norm scales, proj
    Linear qkv, proj;
    Tensor query_scale, key_scale;
    static FluxSelfAttention load(const Weights& w, int64_t hidden, int64_t head_dim);
};

struct FluxDoubleBlock {
    Linear img_mod, txt_mod;  // 6 x hidden: shift, scale, gate for attention, then MLP (not Chroma)
    FluxSelfAttention img_attn, txt_attn;
    Linear img_mlp_0, img_mlp_2, txt_mlp_0, txt_mlp_2;
};

struct FluxSingleBlock {
    Linear linear1;     // qkv and the MLP's input side by side
    Linear linear2;     // attention output and MLP activation side by side
    Linear modulation;  // not Chroma
    Tensor query_scale, key_scale;
};

// The input and output layers FluxModel loads around its transformer: FLUX's img_in and
// final_layer on latent patches, or none (a model with heads of its own).
enum class FluxHeads { LatentPatches, None };

class FluxModel {
  public:
    // w = "model.diffusion_model."; throws listing every missing or mis-shaped tensor (with
    // FluxHeads::None the caller checks w, after loading its heads).
    static FluxModel load(const Weights& w, FluxHeads heads = FluxHeads::LatentPatches);

    // x: [1, C, H, W] latent (H, W padded to the patch size inside), with Fill's or Canny /
    // Depth's extra input channels appended (in_channels / 4 in all), timesteps: f32 [1] in
    // [0, 1] (scaled by 1000 inside, as the reference's time_factor), context: [1, Lt,
    // context_dim], y: [1, vec_dim] (none for Chroma), guidance: the distilled guidance (dev
    // only), refs: Kontext reference latents [1, C, h, w] (any size), numbered by `ref_index`
    // from 1 (flux_positions), txt_mask: undefined, or f32 [Lt] added to the scores of the text
    // keys (-inf skips one; Chroma's padding mask). Returns the velocity [1, out_channels / 4,
    // H, W].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context, const Tensor& y,
                   float guidance, const std::vector<Tensor>& refs = {},
                   RefIndexMode ref_index = RefIndexMode::Fixed, const Tensor& txt_mask = {}) const;

    // The transformer between the heads: img [1, h * w (+ the references'), hidden], the image
    // tokens already embedded (h x w patches), then the references' tokens (refs_hw: their
    // latent sizes, as forward's); the rest as forward. Returns the image tokens' states after
    // the last single block, [1, h * w, hidden].
    Tensor transform(const Tensor& img, int64_t h, int64_t w, const Tensor& timesteps,
                     const Tensor& context, const Tensor& y, float guidance,
                     const Tensor& txt_mask = {},
                     const std::vector<std::pair<int64_t, int64_t>>& refs_hw = {},
                     RefIndexMode ref_index = RefIndexMode::Fixed) const;

    const FluxConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor attention(const Tensor& qkv, const FluxSelfAttention* a, const Tensor& q_scale,
                     const Tensor& k_scale, const Tensor& rope) const;
    // Each block's modulation vectors: FLUX's from SiLU(vec) through the block's linear,
    // Chroma's rows of the approximator's table.
    struct Modulation {
        Tensor svec, table;
    };
    Modulation modulation(const Tensor& timesteps, const Tensor& y, float guidance) const;
    void check_inputs(const Tensor& context, const Tensor& y, const Tensor& txt_mask) const;
    // transform() after the modulation vectors.
    Tensor blocks(const Tensor& img, int64_t h, int64_t w, const Modulation& mod,
                  const Tensor& context, const Tensor& txt_mask,
                  const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                  RefIndexMode ref_index) const;
    void double_block(int i, Tensor& img, Tensor& txt, const Modulation& mod, const Tensor& rope,
                      const Tensor& mask) const;
    Tensor single_block(int i, const Tensor& x, const Modulation& mod, const Tensor& rope,
                        const Tensor& mask) const;

    FluxConfig config_;
    Linear img_in, txt_in;
    MlpEmbedder time_in, guidance_in, vector_in;
    ChromaApproximator distilled_guidance_layer;
    std::shared_ptr<ChromaModulationTable> chroma_table_;
    std::vector<FluxDoubleBlock> double_blocks;
    std::vector<FluxSingleBlock> single_blocks;
    Linear final_adaln, final_linear;
    WeightPages pages_;
};

// The positions of FLUX's tokens: `txt` text tokens at (0, 0, 0), the h x w image patches at
// (0, row, col), then each reference's patches (refs_hw: its latent height and width) at
// (index, row + h_offset, col + w_offset) as the reference's gen_flux_ids: Fixed puts all at
// index 1 side by side (offsets in latent pixels), Increase at 1, 2, ..., Decrease at 0, -1,
// ... each at the origin. Rows of 3 values.
std::vector<float> flux_positions(int64_t txt, int64_t h, int64_t w, int64_t patch,
                                  const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                  RefIndexMode ref_index);

}  // namespace sd
