// The UNet of SD 1.x, 2.x and SDXL (incl. the 9-channel inpaint variants and the smaller
// SDXL-layout UNets such as SSD-1B and Vega), as ldm's / sgm's openaimodel.py UNetModel,
// block for block and with its tensor names:
//   time_embed [+ label_emb(y)] -> input_blocks (ResBlock [+ SpatialTransformer], Downsample)
//   -> middle_block (ResBlock [, SpatialTransformer, ResBlock]) ->
//   output_blocks (ResBlock on the concatenated skip [+ SpatialTransformer], Upsample) -> out
// Every size is read from the weights: widths, levels, res blocks a level, each
// transformer's depth (SDXL: 0/2/10 by level; SSD-1B: per block), the context width and
// label_emb's input width (SDXL's pooled text + size/crop vector, 2816).
#pragma once

#include <optional>
#include <vector>

#include "nn/layers.h"

namespace sd {

struct UNetConfig {
    int64_t in_channels = 4;
    int64_t out_channels = 4;
    int64_t model_channels = 320;
    std::vector<int64_t> channel_mult = {1, 2, 4, 4};
    int num_res_blocks = 2;
    std::vector<bool> attention_at_level = {true, true, true, false};
    int64_t context_dim = 768;
    int64_t num_heads = 8;           // SD 1.x: 8 heads whatever the width
    int64_t head_channels = -1;      // SD 2.x: heads of 64 channels
    bool linear_projection = false;  // SD 2.x: proj_in/proj_out are Linear, not 1x1 convs
    int64_t adm_in_channels = 0;     // label_emb's input width (SDXL: 2816); 0: none
};

struct ResBlock {
    GroupNorm in_norm;
    Conv2d in_conv;
    Linear emb_proj;
    GroupNorm out_norm;
    Conv2d out_conv;
    std::optional<Conv2d> skip_connection;  // 1x1 conv when the width changes

    static ResBlock load(const Weights& w, int64_t in, int64_t out, int64_t emb_dim);
    Tensor forward(const Tensor& x, const Tensor& emb) const;
};

struct CrossAttention {
    Linear to_q, to_k, to_v, to_out;
    int64_t heads = 8;

    static CrossAttention load(const Weights& w, int64_t dim, int64_t context_dim, int64_t heads);
    // context undefined: self-attention.
    Tensor forward(const Tensor& x, const Tensor& context) const;
};

struct BasicTransformerBlock {
    LayerNorm norm1, norm2, norm3;
    CrossAttention attn1, attn2;
    Linear ff_proj, ff_out;  // GEGLU: ff.net.0.proj [2*inner, dim], ff.net.2 [dim, inner]

    Tensor forward(const Tensor& x, const Tensor& context) const;
};

struct SpatialTransformer {
    GroupNorm norm;
    Linear proj_in_linear, proj_out_linear;  // SD 2.x
    Conv2d proj_in_conv, proj_out_conv;      // SD 1.x
    bool linear = false;
    std::vector<BasicTransformerBlock> blocks;

    // The depth (transformer_blocks.N) is read from the weights.
    static SpatialTransformer load(const Weights& w, int64_t channels, const UNetConfig& c);
    Tensor forward(const Tensor& x, const Tensor& context) const;
};

// One entry of input_blocks / middle_block / output_blocks: the layers it chains.
struct UNetBlock {
    std::optional<ResBlock> res;
    std::optional<SpatialTransformer> attention;
    std::optional<Conv2d> conv;  // input_blocks.0 (conv_in), Downsample's op, Upsample's conv
};

// time_embed [+ label_emb], input_blocks and middle_block: the UNet's first half, which a
// ControlNet copies under its own names (control_model.*). Its outputs feed the skips.
struct UNetEncoder {
    UNetConfig config;
    Linear time_embed_0, time_embed_2;
    Linear label_emb_0, label_emb_2;  // class/ADM embedding (SDXL), when adm_in_channels > 0
    std::vector<UNetBlock> input_blocks, middle_block;
    std::vector<int64_t> skip_channels;  // each input block's output width

    // The configuration read from the weights under `w`; `what` names the network in messages.
    static UNetEncoder load(const Weights& w, const char* what);
    int64_t middle_channels() const { return skip_channels.back(); }
    // Checks x / timesteps / context / y against the configuration (naming `what`) and
    // returns the timestep (+ label) embedding [B, 4 * model_channels].
    Tensor embed(const Tensor& x, const Tensor& timesteps, const Tensor& context, const Tensor& y,
                 const char* what) const;
    Tensor run_block(const UNetBlock& block, Tensor h, const Tensor& emb,
                     const Tensor& context) const;
};

// What a ControlNet adds to a UNet (ldm's ControlledUnetModel): one residual a skip (each
// input block's output) and one for the middle block's output, last, each times strength.
struct UNetControl {
    std::vector<Tensor> residuals;
    float strength = 1.0f;
};

class UNet {
  public:
    static UNet load(const Weights& w);  // w = "model.diffusion_model."

    // x: [B, in_channels, H, W] latents (H, W multiples of 8), timesteps: f32 [B],
    // context: [B, L, context_dim], y: [B, adm_in_channels] when the model has label_emb
    // (else undefined), control: a ControlNet's residuals or null. Returns the model output
    // [B, out_channels, H, W].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                   const Tensor& y = {}, const UNetControl* control = nullptr) const;

    const UNetConfig& config() const { return encoder_.config; }
    // The widths a ControlNet's residuals must have: the skips', then the middle block's.
    std::vector<int64_t> control_channels() const;
    // The depth of every SpatialTransformer, input blocks, middle block, output blocks in
    // order (what an SDXL-layout distillation changes).
    std::vector<int> transformer_depths() const;
    // Drops the weights' file pages from RSS (see Residency); the next forward faults
    // them back in from the page cache.
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    UNetEncoder encoder_;
    std::vector<UNetBlock> output_blocks;
    GroupNorm out_norm;
    Conv2d out_conv;
    WeightPages pages_;
};

}  // namespace sd
