// TAESD, the tiny autoencoder of Stable Diffusion (madebyollin/taesd; stable-diffusion.cpp's
// tae.hpp): three stride-2 stages of 64-channel residual blocks each way, with the tensor
// names of its single-file form (`encoder.layers.N.*`, `decoder.layers.N.*`). Unlike the KL
// VAE it works on the diffusion model's own latents (already scaled) and on images in
// [0, 1]. The latent width (4 for SD 1.x/2.x/XL, 16 for the SD3/FLUX variants) and the block
// width are read from the weights.
#pragma once

#include <optional>
#include <vector>

#include "nn/layers.h"

namespace sd {

struct TaesdConfig {
    int64_t latent_channels = 4;
    int64_t width = 64;  // every hidden layer's channels
};

// conv.0 -> ReLU -> conv.2 -> ReLU -> conv.4, plus the input, then ReLU (taesd.py Block).
struct TaesdBlock {
    Conv2d conv0, conv2, conv4;

    static TaesdBlock load(const Weights& w, int64_t channels);
    Tensor forward(const Tensor& x) const;
};

// Layers: 0 conv_in, 1 block, then three times (stride-2 conv without bias, 3 blocks),
// then conv_out.
class TaesdEncoder {
  public:
    static TaesdEncoder load(const Weights& w, const TaesdConfig& c);  // w = "encoder.layers."
    Tensor forward(const Tensor& x) const;  // [B, 3, H, W] in [0, 1] -> [B, z, H/8, W/8]

  private:
    struct Stage {
        Conv2d down;
        std::vector<TaesdBlock> blocks;
    };
    Conv2d conv_in;
    TaesdBlock block_in;
    std::vector<Stage> stages;
    Conv2d conv_out;
};

// Layers: 0 conv_in, 1 ReLU, then three times (3 blocks, 2x nearest upsample, conv without
// bias), one more block, conv_out. The latent first goes through 3 tanh(z / 3), a soft clamp.
class TaesdDecoder {
  public:
    static TaesdDecoder load(const Weights& w, const TaesdConfig& c);  // w = "decoder.layers."
    Tensor forward(const Tensor& z) const;  // [B, z, h, w] -> [B, 3, 8h, 8w], about [0, 1]

  private:
    struct Stage {
        std::vector<TaesdBlock> blocks;
        Conv2d up;  // reads its input upsampled 2x
    };
    Conv2d conv_in;
    std::vector<Stage> stages;
    TaesdBlock block_out;
    Conv2d conv_out;
};

class Taesd {
  public:
    // w at the file's root; the encoder is built only when asked (img2img, inpaint).
    static Taesd load(const Weights& w, bool with_encoder);

    // Scaled latents -> images, not clamped (the caller clamps to [0, 1]).
    Tensor decode(const Tensor& z) const;
    // Images in [0, 1] -> scaled latents.
    Tensor encode(const Tensor& image01) const;

    bool has_encoder() const { return encoder_.has_value(); }
    const TaesdConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }  // see AutoencoderKL

  private:
    TaesdConfig config_;
    TaesdDecoder decoder_;
    std::optional<TaesdEncoder> encoder_;
    WeightPages pages_;
};

}  // namespace sd
