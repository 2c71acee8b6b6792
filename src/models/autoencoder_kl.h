// The KL autoencoder (VAE) of SD 1.x/2.x, as ldm's autoencoder.py AutoencoderKL with the
// Encoder/Decoder of ldm/modules/diffusionmodules/model.py: images in [-1, 1] <-> latents.
#pragma once

#include <optional>
#include <vector>

#include "nn/layers.h"

namespace sd {

struct VaeConfig {
    int64_t ch = 128;
    std::vector<int64_t> ch_mult = {1, 2, 4, 4};
    int num_res_blocks = 2;
    int64_t z_channels = 4;
    int64_t image_channels = 3;
    bool has_quant_conv = true;  // post_quant_conv / quant_conv (absent in FLUX's VAE)
};

struct VaeResnetBlock {
    GroupNorm norm1, norm2;
    Conv2d conv1, conv2;
    std::optional<Conv2d> nin_shortcut;

    static VaeResnetBlock load(const Weights& w, int64_t in, int64_t out);
    Tensor forward(Tensor x) const;
};

struct VaeAttnBlock {
    GroupNorm norm;
    Conv2d q, k, v, proj_out;  // 1x1 convs

    static VaeAttnBlock load(const Weights& w, int64_t channels);
    Tensor forward(const Tensor& x) const;
};

struct VaeMid {
    VaeResnetBlock block_1, block_2;
    VaeAttnBlock attn_1;
    static VaeMid load(const Weights& w, int64_t channels);
    Tensor forward(const Tensor& x) const;
};

class VaeDecoder {
  public:
    static VaeDecoder load(const Weights& w, const VaeConfig& c);  // w = "...decoder."
    Tensor forward(const Tensor& z) const;                         // [B, z, h, w] -> [B, 3, 8h, 8w]

  private:
    struct Level {
        std::vector<VaeResnetBlock> blocks;
        std::optional<Conv2d> upsample;
    };
    Conv2d conv_in;
    VaeMid mid;
    std::vector<Level> up;  // up[0] is the full-resolution level, run last
    GroupNorm norm_out;
    Conv2d conv_out;
};

class VaeEncoder {
  public:
    static VaeEncoder load(const Weights& w, const VaeConfig& c);  // w = "...encoder."
    Tensor forward(const Tensor& x) const;  // [B, 3, H, W] -> [B, 2z, H/8, W/8]

  private:
    struct Level {
        std::vector<VaeResnetBlock> blocks;
        std::optional<Conv2d> downsample;  // stride 2 after padding right and bottom by one
    };
    Conv2d conv_in;
    std::vector<Level> down;
    VaeMid mid;
    GroupNorm norm_out;
    Conv2d conv_out;
};

class AutoencoderKL {
  public:
    // w = "first_stage_model."; the encoder is built only when asked (img2img, inpaint).
    static AutoencoderKL load(const Weights& w, bool with_encoder);

    // Latents (already divided by the scale factor) -> images in [-1, 1].
    Tensor decode(const Tensor& z) const;
    // Images in [-1, 1] -> the posterior's mean and log-variance, each [B, z, H/8, W/8].
    std::pair<Tensor, Tensor> encode(const Tensor& x) const;

    bool has_encoder() const { return encoder_.has_value(); }
    const VaeConfig& config() const { return config_; }
    // Drops the weights' file pages from RSS (see Residency); the next forward faults
    // them back in from the page cache.
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    VaeConfig config_;
    std::optional<Conv2d> post_quant_conv, quant_conv;
    VaeDecoder decoder_;
    std::optional<VaeEncoder> encoder_;
    WeightPages pages_;
};

}  // namespace sd
