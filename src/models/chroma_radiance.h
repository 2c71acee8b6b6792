// Chroma-Radiance (lodestones' Chroma1-Radiance): Chroma's transformer on pixels instead of VAE
// latents, as stable-diffusion.cpp's flux.hpp (forward_chroma_radiance) and ComfyUI's
// chroma_radiance, with their tensor names:
//   img_in_patch (a 16x16 convolution of stride 16: one token per 16x16 pixel patch) ->
//   Chroma's txt_in, distilled guidance layer, double_blocks.N and single_blocks.N (models/
//   flux.h, FluxHeads::None) -> each patch's final state s, decoded pixel by pixel:
//   nerf_image_embedder (the patch's pixels beside a fixed DCT-like code of their position
//   in the patch, one linear) -> nerf_blocks.N (NerfGLUBlock: a SwiGLU MLP whose weights are
//   generated from s by param_generator, each weight column L2-normalised, RMS norm before,
//   residual after) -> nerf_final_layer_conv (RMS norm over channels, 3x3 convolution to RGB).
// Variants marked by empty tensors: `__x0__` predicts the clean image (turned into the flow
// velocity (x - x0) / t), `__32x32__` works on 32x32 patches, the transformer reading the
// image downscaled by 2. The NeRF head's width, depth, MLP ratio and frequencies are read from
// the weights.
#pragma once

#include <vector>

#include "models/flux.h"
#include "nn/layers.h"

namespace sd {

struct ChromaRadianceConfig {
    int64_t channels = 3;  // the image's
    int64_t patch = 16;    // pixels per patch side (32 with __32x32__)
    int64_t nerf_hidden = 64;
    int64_t nerf_mlp_ratio = 4;
    int64_t max_freqs = 8;  // the position code's frequencies per axis (max_freqs^2 values)
    bool x0 = false;        // __x0__: predicts the clean image
};

// One NerfGLUBlock: its weights come from the patch's state (param_generator), its RMS norm
// scale is its own.
struct NerfGluBlock {
    Linear param_generator;  // hidden -> 3 * nerf_hidden^2 * mlp_ratio
    Tensor norm_scale;       // [nerf_hidden]
};

class ChromaRadianceModel {
  public:
    // w = "model.diffusion_model."; throws listing every missing or mis-shaped tensor.
    static ChromaRadianceModel load(const Weights& w);

    // x: [1, 3, H, W] the noisy image (in [-1, 1] when clean; padded to whole patches inside),
    // timesteps: f32 [1] in [0, 1], context / txt_mask as FluxModel::forward. Returns the flow
    // velocity [1, 3, H, W].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                   const Tensor& txt_mask = {}) const;

    const ChromaRadianceConfig& config() const { return config_; }
    const FluxModel& transformer() const { return transformer_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    // The NeRF head over patches [first, first + n) of `pixels` ([np, P^2, C]) given their
    // states ([np, hidden]): [n, P^2, nerf_hidden].
    Tensor decode_patches(const Tensor& pixels, const Tensor& states, int64_t first,
                          int64_t n) const;

    ChromaRadianceConfig config_;
    FluxModel transformer_;
    Conv2d img_in_patch;   // 16x16, stride 16
    Linear nerf_embedder;  // (C pixel values, F^2 position codes) -> nerf_hidden
    Tensor position_code;  // nerf_position_code: [P^2, F^2]
    std::vector<NerfGluBlock> nerf_blocks;
    Tensor final_norm_scale;  // [nerf_hidden]
    Conv2d final_conv;        // nerf_hidden -> 3, 3x3
    WeightPages pages_;
};

// The NeRF embedder's fixed position code of the P x P pixels of a patch, [P^2, F^2] (the
// reference's fetch_dct_pos): pixel (i, j) at (y, x) = (i, j) / (P - 1), feature (u, v) =
// cos(pi u x) cos(pi v y) / (1 + u v).
Tensor nerf_position_code(int64_t patch, int64_t max_freqs);

}  // namespace sd
