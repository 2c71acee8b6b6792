// TAEHV, the tiny autoencoder of video latents (madebyollin/taehv; stable-diffusion.cpp's
// tae.hpp TAEHV): Wan 2.1's (16 latent channels) and Wan 2.2 TI2V's (48, over 2x2 pixel
// patches). The frames of a clip are the batch of 2-D convolutions; a MemBlock mixes each
// frame with its predecessor's input, TGrow turns one frame into several (decoder) and TPool
// several into one (encoder), so 1 + 4k frames and 1 + k latent frames correspond as in the
// Wan VAE. Like TAESD it reads and writes the diffusion model's own latents and images in
// [0, 1]. Tensor names as its file: decoder.N.*, encoder.N.*; the latent width and the patch
// are read from the weights.
#pragma once

#include <optional>
#include <vector>

#include "nn/layers.h"

namespace sd {

struct TaehvConfig {
    int64_t latent_channels = 16;
    int64_t patch = 1;  // pixels folded into channels a side (pixel_unshuffle), 2 for Wan 2.2
};

// relu(conv.4(relu(conv.2(relu(conv.0(cat(x, past)))))) + skip(x)), past the previous
// frame's x (zeros before the first): x [T, C, H, W].
struct TaehvMemBlock {
    Conv2d conv0, conv2, conv4;
    std::optional<Conv2d> skip;  // a 1x1 conv where the widths differ

    static TaehvMemBlock load(const Weights& w, int64_t in, int64_t out);
    Tensor forward(const Tensor& x) const;
};

// Decoder layers: 0 the soft clamp 3 tanh(z / 3), 1 conv_in (z -> 256), 2 ReLU, then for the
// widths 256, 128, 64: 3 MemBlocks, a 2x upsample, TGrow (a 1x1 conv to `stride` frames of
// channels: 1, 2, 2) and a 3x3 conv to the next width (128, 64, 64); ReLU; conv_out (-> 3
// p^2). The first 3 of the 4T frames are dropped: 1 + 4 (T - 1).
class TaehvDecoder {
  public:
    static TaehvDecoder load(const Weights& w, const TaehvConfig& c);  // w = "decoder."
    // [T, z, h, w] -> [4T - 3, 3, 8 p h, 8 p w], about [0, 1].
    Tensor forward(const Tensor& z) const;

  private:
    struct Stage {
        std::vector<TaehvMemBlock> blocks;
        int64_t stride = 1;
        Conv2d grow;  // TGrow's 1x1 conv: C -> C * stride
        Conv2d conv;  // reads its input upsampled 2x
    };
    int64_t patch_ = 1;
    Conv2d conv_in;
    std::vector<Stage> stages;
    Conv2d conv_out;
};

// Encoder layers: 0 conv_in (3 p^2 -> 64), 1 ReLU, then three times TPool (frames 2, 2, 1
// into one by a 1x1 conv), a stride-2 3x3 conv and 3 MemBlocks; conv_out (-> z). A clip is
// padded to a multiple of 4 frames with its last.
class TaehvEncoder {
  public:
    static TaehvEncoder load(const Weights& w, const TaehvConfig& c);  // w = "encoder."
    // [F, 3, H, W] in [0, 1] -> [ceil(F / 4), z, H / (8 p), W / (8 p)].
    Tensor forward(const Tensor& frames) const;

  private:
    struct Stage {
        int64_t stride = 1;
        Conv2d pool;  // TPool's 1x1 conv: C * stride -> C
        Conv2d down;
        std::vector<TaehvMemBlock> blocks;
    };
    int64_t patch_ = 1;
    Conv2d conv_in;
    std::vector<Stage> stages;
    Conv2d conv_out;
};

class Taehv {
  public:
    // w at the file's root; the encoder is built only when asked (image-to-video).
    static Taehv load(const Weights& w, bool with_encoder);
    // Whether a file's weights are a TAEHV (decoder.1.weight) rather than a TAESD.
    static bool is_taehv(const Weights& w);

    // Model latents [T, z, h, w] -> frames [1 + 4 (T - 1), 3, H, W], not clamped.
    Tensor decode(const Tensor& z) const;
    // Frames [F, 3, H, W] in [0, 1] -> model latents [ceil(F / 4), z, h, w].
    Tensor encode(const Tensor& frames01) const;

    bool has_encoder() const { return encoder_.has_value(); }
    const TaehvConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }

  private:
    TaehvConfig config_;
    TaehvDecoder decoder_;
    std::optional<TaehvEncoder> encoder_;
    WeightPages pages_;
};

}  // namespace sd
