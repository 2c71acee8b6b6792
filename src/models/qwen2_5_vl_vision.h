// The vision tower of Qwen2.5-VL (the `visual.*` tensors), as transformers'
// Qwen2_5_VisionTransformerPretrainedModel and the reference program's LLM::VisionModel: it turns
// an RGB image into embeddings of the LLM's width that Qwen-Image-Edit splices into the prompt.
//
//   patch_embed.proj (Conv3d [width, 3, 2, 14, 14], no bias; a still image is its frame twice)
//   -> blocks.N: x + attn(norm1(x)), x + mlp(norm2(x)); RMS norms (eps 1e-6); attn.qkv fused
//      with bias, 2-D rotary positions (the first half of a head's rotated pairs turned by the
//      patch's row, the second half by its column; pairs (i, i + head_dim / 2), theta 10000),
//      attn.proj; mlp down_proj(silu(gate_proj x) * up_proj x), all with biases
//   -> merger: ln_q (RMS) on each patch, the 2x2 patches of a merge unit joined (4 * width),
//      mlp.0 -> tanh-GELU -> mlp.2 (the LLM's width, 3584 for the 7B).
// Patches are ordered merge unit by merge unit (the 2x2 patches of a unit together), and the
// units window by window: windows of window_size px (8 x 8 patches, 4 x 4 units; the ones at
// the right and bottom edges smaller when the grid is no multiple of them), row-major, units
// row-major inside. Blocks attend within their window, except the full-attention blocks. The
// merger's output comes back in the units' row-major order.
//
// Configuration from the weights: width and patch size from patch_embed.proj, depth from the
// blocks.N present, feed-forward width from gate_proj, the merge size from merger.mlp.0
// (4 * width wide for 2x2), the output width from merger.mlp.2. Heads, window and the
// full-attention blocks are not in the weights: VisionOptions (the reference's fixed values).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "nn/layers.h"

namespace sd {

// What the weights do not say; defaults are Qwen2.5-VL's (3B / 7B / 32B / 72B alike).
struct VisionOptions {
    int64_t heads = 16;
    int64_t window_size = 112;  // pixels
    // Blocks with full attention; the others attend within windows. A tower with fewer blocks
    // keeps the indexes it has (the reference's fixed set: none of them in a 2-block tower).
    std::vector<int> fullatt_blocks = {7, 15, 23, 31};
    float eps = 1e-6f;
    float rope_theta = 10000.0f;
};

struct VisionConfig {
    int64_t width = 1280;  // hidden_size
    int64_t depth = 32;
    int64_t heads = 16;
    int64_t head_dim = 80;
    int64_t ffn = 3420;  // intermediate_size
    int64_t out_width = 3584;
    int64_t in_channels = 3;
    int64_t patch = 14;
    int64_t temporal_patch = 2;
    int64_t merge = 2;  // spatial_merge_size
    int64_t window_size = 112;
    std::vector<int> fullatt_blocks;
    float eps = 1e-6f;
    float rope_theta = 10000.0f;
};

struct VisionBlock {
    Tensor norm1, norm2;  // RMS scales [width], f32
    Linear qkv, proj;
    Linear gate, up, down;
};

class Qwen25VisionModel {
  public:
    // w: the tower's scope ("text_encoders.llm.visual."); throws one sd::Error listing every
    // missing or mis-shaped tensor, or saying why the weights are no such tower.
    static Qwen25VisionModel load(const Weights& w, const VisionOptions& options = {});

    // pixels: f32 [1, 3, H, W] normalised as qwen25_vision_preprocess does, H and W multiples
    // of patch * merge (28). Returns [1, (H / 28) * (W / 28), out_width]: one embedding per
    // merge unit, row-major.
    Tensor forward(const Tensor& pixels) const;

    const VisionConfig& config() const { return config_; }
    // The multiple of an image's sides: patch * merge (28).
    int64_t factor() const { return config_.patch * config_.merge; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor patch_tokens(const Tensor& pixels, const std::vector<int64_t>& unit_order) const;
    Tensor attention(const VisionBlock& b, const Tensor& x, const Tensor& rope,
                     const std::vector<int64_t>& windows) const;
    Tensor merge(const Tensor& x) const;

    VisionConfig config_;
    Linear patch_embed_;  // the Conv3d's weight as a [width, C * T * p * p] matrix
    std::vector<VisionBlock> blocks_;
    Tensor ln_q_;  // [width], f32
    Linear mlp0_, mlp2_;
    WeightPages pages_;
};

// The window layout of a units_h x units_w grid of merge units (window_units units a side):
// `order` lists the units (row-major indexes) window by window, each window row-major; `ends`
// the end of each window in that order, counted in units.
struct VisionWindows {
    std::vector<int64_t> order;
    std::vector<int64_t> ends;
};
VisionWindows vision_windows(int64_t units_h, int64_t units_w, int64_t window_units);

// The size Qwen-Image-Edit gives a reference image before the tower (the reference's
// QwenImageEditPlusPipeline path, area mode): each side rounded to a multiple of `factor`, then,
// when the area is over max_pixels, both sides scaled by sqrt(h w / max_pixels) and floored to
// multiples (at least factor); when under min_pixels, scaled up by sqrt(min_pixels / (h w)) and
// ceiled. Returns (height, width). Throws naming the size when a side is not positive.
std::pair<int64_t, int64_t> qwen25_vision_size(int64_t height, int64_t width, int64_t factor = 28,
                                               int64_t min_pixels = 384 * 384,
                                               int64_t max_pixels = 560 * 560);

// The reference's clip_preprocess: image f32 [1, 3, H, W] in [0, 1] scaled (nearest) by the
// larger of out_h / H and out_w / W, centre-cropped to out_h x out_w, clamped to [0, 1] and
// normalised with CLIP's mean (0.48145466, 0.4578275, 0.40821073) and std (0.26862954,
// 0.26130258, 0.27577711). Returns [1, 3, out_h, out_w].
Tensor qwen25_vision_preprocess(const Tensor& image, int64_t out_h, int64_t out_w);

}  // namespace sd
