// The CLIP text transformer of SD 1.x (OpenAI ViT-L/14), SD 2.x (OpenCLIP ViT-H/14) and SDXL
// (ViT-L/14 and OpenCLIP ViT-bigG/14 with its text projection; OpenCLIP names converted to
// these by io/name_conversion), as transformers' CLIPTextModel(WithProjection): token +
// position embeddings, pre-norm transformer layers with causal self-attention (nn/clip_blocks.h,
// shared with the image tower), final layer norm, and for the pooled output the projection of the
// end token's state.
#pragma once

#include <optional>
#include <vector>

#include "nn/clip_blocks.h"

namespace sd {

struct ClipConfig {
    int64_t vocab = 49408;
    int64_t max_positions = 77;
    int64_t hidden = 768;
    int64_t layers = 12;
    int64_t heads = 12;
    int64_t intermediate = 3072;
    bool quick_gelu = true;  // OpenAI CLIP; OpenCLIP uses exact GELU
};

class ClipTextEncoder {
  public:
    // Builds from `w` = "...text_model." (config read from the shapes); throws listing
    // every missing or mis-shaped tensor. `projection` = "...text_projection." when the
    // model's pooled output is used (SDXL's bigG), else omitted.
    static ClipTextEncoder load(const Weights& w, const Weights* projection = nullptr);

    // tokens: i32 [B, 77]. Runs the first `layers - (clip_skip - 1)` layers (clip_skip 1 =
    // all), then the final layer norm unless `final_norm` is false (SDXL reads the raw
    // penultimate states). Returns f32 [B, 77, hidden]. Ids from vocab on pick rows of
    // `extra_embeddings` (f32 [n, hidden]: textual-inversion vectors).
    Tensor forward(const Tensor& tokens, int clip_skip = 1, const Tensor& extra_embeddings = {},
                   bool final_norm = true) const;

    // The pooled output of one window: every layer, the final layer norm, the state of
    // token `index` (the end token) times the text projection, or as it is when the
    // encoder has none (FLUX's CLIP-L). tokens: i32 [1, 77]; returns f32 [1, width].
    Tensor pooled(const Tensor& tokens, int64_t index) const;

    const ClipConfig& config() const { return config_; }
    // Drops the weights' file pages from RSS (see Residency); the next forward faults
    // them back in from the page cache.
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor embed_tokens(const Tensor& tokens, const Tensor& extra_embeddings) const;

    ClipConfig config_;
    Tensor token_embedding, position_embedding;
    ClipEncoder encoder_;  // causal
    LayerNorm final_layer_norm;
    std::optional<Linear> text_projection;  // [proj, hidden], no bias
    WeightPages pages_;
};

}  // namespace sd
