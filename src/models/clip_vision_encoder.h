// The image tower of CLIP as transformers' CLIPVisionModelWithProjection and stable-diffusion.cpp's
// CLIPVisionModelProjection: OpenCLIP's ViT-H/14 ("clip_vision_h", Wan 2.1's image-to-video and
// the IP-adapters'), OpenAI's ViT-L/14 and OpenCLIP's ViT-bigG/14, in Hugging Face's names
// (vision_model.embeddings.{patch_embedding.weight, class_embedding, position_embedding.weight},
// pre_layrnorm, encoder.layers.N, post_layernorm; visual_projection.weight). 14 px patches
// (a convolution without bias), the class token before them, learned positions, a layer norm,
// the pre-norm transformer layers of nn/clip_blocks.h without a mask; for the pooled output the
// class token's final state through post_layernorm and the projection.
#pragma once

#include <optional>

#include "nn/clip_blocks.h"

namespace sd {

struct ClipVisionConfig {
    int64_t hidden = 1280;  // ViT-H; ViT-L 1024, bigG 1664
    int64_t layers = 32;
    int64_t heads = 16;
    int64_t intermediate = 5120;
    int64_t channels = 3;
    int64_t patch = 14;
    int64_t image_size = 224;  // (positions - 1) = (image_size / patch)^2
    int64_t positions = 257;   // class token + patches
    int64_t projection = 0;    // visual_projection's width (ViT-H 1024); 0 without one
    bool quick_gelu = false;   // OpenAI's towers; OpenCLIP's use exact GELU
};

// What the weights cannot say. Defaults: CLIP's towers all have 64-wide heads up to ViT-L's
// 1024 and 16 heads above (ViT-H 80 wide, bigG 104); quick GELU for OpenAI's towers (up to 1024
// wide: B, L), exact GELU for OpenCLIP's H and bigG, as their configs say.
struct ClipVisionOptions {
    int64_t heads = 0;               // 0: from the width
    std::optional<bool> quick_gelu;  // unset: from the width
};

class ClipVisionEncoder {
  public:
    // Builds from `w` = the vision model's scope (its names "embeddings.*", "pre_layrnorm.*",
    // "encoder.layers.N.*", "post_layernorm.*"; a --clip_vision file's are under
    // "cond_stage_model.transformer.vision_model."), the configuration read from the shapes.
    // The projection: `projection` ("...visual_projection.") when given, else
    // "visual_projection." under `w` when the files have it (where the loader puts a
    // --clip_vision file's visual_projection.weight), else none. Throws listing every missing or
    // mis-shaped tensor.
    static ClipVisionEncoder load(const Weights& w, const Weights* projection = nullptr,
                                  const ClipVisionOptions& options = {});

    // pixels: f32 [B, 3, S, S], S = image_size (clip_vision_preprocess's output). Runs the first
    // `layers - (clip_skip - 1)` layers when clip_skip > 0, every layer when clip_skip <= 0 (the
    // reference's convention: Wan's get_clip_vision_output(image, false, -2) runs all of them)
    // and returns their hidden states [B, positions, hidden] without post_layernorm (the
    // reference's return_pooled = false).
    Tensor forward(const Tensor& pixels, int clip_skip = -1) const;

    // return_pooled = true: the class token's state after the layers forward() runs, through
    // post_layernorm and visual_projection: f32 [B, projection]. Throws when there is no
    // projection.
    Tensor pooled(const Tensor& pixels, int clip_skip = -1) const;

    const ClipVisionConfig& config() const { return config_; }
    bool has_projection() const { return visual_projection.has_value(); }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor embed(const Tensor& pixels) const;

    ClipVisionConfig config_;
    Conv2d patch_embedding;     // [hidden, 3, patch, patch], stride patch, no bias
    Tensor class_embedding;     // f32 [hidden]
    Tensor position_embedding;  // f32 [positions, hidden]
    LayerNorm pre_layrnorm, post_layernorm;
    ClipEncoder encoder;
    std::optional<Linear> visual_projection;  // [projection, hidden], no bias
    WeightPages pages_;
};

// The reference's clip_preprocess for this tower: image f32 [1, 3, H, W] in [0, 1] -> f32
// [1, 3, size, size] (nn/clip_blocks.h's clip_image_preprocess, size = the config's image_size).
Tensor clip_vision_preprocess(const Tensor& image, int64_t size = 224);

}  // namespace sd
