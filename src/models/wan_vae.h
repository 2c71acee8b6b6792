// The Wan 2.1 and 2.2 VAEs, as Wan's wan/modules/vae.py and Wan2.2's vae2_2.py (WanVAE_ with
// its Encoder3d / Decoder3d): causal video autoencoders, 4x smaller in time (1 + 4k frames <->
// 1 + k latent frames), RMS norms, one attention block in the middle. 2.1: 8x smaller in space,
// z = 16. 2.2 (TI2V-5B's): 2x2 pixels folded into channels first (patchify), so 16x smaller,
// z = 48, and each level wrapped in a weightless shortcut that moves pixels between space-time
// and channels (AvgDown3D / DupUp3D). Which one is read from the weights. A clip is encoded
// 1 + 4 + 4 ... frames at a time and decoded one latent frame at a time, each chunk reading
// the last frames of the one before through a CausalConvCache; an image is a one-frame clip.
// Activations are frames-first, [T, C, H, W]. The per-channel latent normalisation (Wan's
// mean / std) belongs to the family's latent format, not to this network.
#pragma once

#include <optional>
#include <vector>

#include "nn/causal_conv3d.h"

namespace sd {

struct WanVaeConfig {
    int64_t dim = 96;      // the encoder's first width
    int64_t dec_dim = 96;  // the decoder's last width
    int64_t z = 16;
    std::vector<int64_t> mult = {1, 2, 4, 4};
    int res_blocks = 2;  // a level's blocks in the encoder (the decoder has one more)
    // Wan 2.2's layout: level shortcuts, upsamplers that keep their width, patch = 2.
    bool wan22 = false;
    int64_t patch = 1;  // pixels a side folded into channels around the encoder / decoder
    // A frame's channels: 3 (RGB), or 4 for Qwen-Image-Layered's RGBA VAE (a Wan 2.1 VAE).
    int64_t colors = 3;

    // How much smaller a latent is than its frames, a side: 8 (2.1) or 16 (2.2).
    int64_t scale() const { return 8 * patch; }
    int64_t video_channels() const { return colors * patch * patch; }  // the encoder's input
};

// F.normalize over channels times sqrt(C) and gamma: an RMS norm of each pixel's channels.
struct WanRmsNorm {
    Tensor gamma;  // [C]
    static WanRmsNorm load(const Weights& w, int64_t channels);
    // x [T, C, H, W]; SiLU after it when `then_silu` (the residual blocks' and heads').
    Tensor forward(const Tensor& x, bool then_silu = false) const;
};

struct WanResidualBlock {
    WanRmsNorm norm1, norm2;               // residual.0, residual.3
    CausalConv3d conv1, conv2;             // residual.2, residual.6
    std::optional<CausalConv3d> shortcut;  // 1x1x1, when the width changes

    static WanResidualBlock load(const Weights& w, int64_t in, int64_t out);
    Tensor forward(const Tensor& x, CausalConvCache& cache) const;
};

// Single-head self-attention over each frame's pixels.
struct WanAttentionBlock {
    WanRmsNorm norm;
    Conv2d to_qkv, proj;

    static WanAttentionBlock load(const Weights& w, int64_t channels);
    Tensor forward(const Tensor& x) const;
};

// Wan's Resample: 2x nearest upsampling then a 3x3 conv halving the width, or a 3x3 stride-2
// conv; the 3-D modes also double (time_conv to 2C channels, interleaved into frames) or
// halve (stride-2 time_conv) the frames.
struct WanResample {
    enum class Mode { Upsample2d, Upsample3d, Downsample2d, Downsample3d };
    Mode mode;
    Conv2d resample;                        // resample.1
    std::optional<CausalConv3d> time_conv;  // the 3-D modes

    // Wan 2.2's upsamplers keep the width (keep_width).
    static WanResample load(const Weights& w, int64_t dim, Mode mode, bool keep_width = false);
    Tensor forward(const Tensor& x, CausalConvCache& cache) const;
};

// Wan 2.2's AvgDown3D, the shortcut around an encoder level: each ft x fs x fs block of
// frames and pixels folded into channels (the chunk's frames padded in front to a multiple
// of ft), then each run of consecutive channels averaged down to `out`. No weights, no cache.
struct WanAvgDown3d {
    int64_t out = 0;
    int64_t ft = 1, fs = 1;  // time and space factors
    Tensor forward(const Tensor& x) const;
};

// Wan 2.2's DupUp3D, the shortcut around a decoder level: its inverse, each channel repeated
// to out * ft * fs * fs channels, unfolded into ft frames of fs x fs pixels. The first chunk
// drops its first ft - 1 frames, as the upsampler's time_conv there makes one frame of one.
struct WanDupUp3d {
    int64_t out = 0;
    int64_t ft = 1, fs = 1;
    Tensor forward(const Tensor& x, bool first_chunk) const;
};

class WanVaeEncoder {
  public:
    static WanVaeEncoder load(const Weights& w, const WanVaeConfig& c);  // w = "encoder."
    // One chunk: [T, 3 patch^2, H, W] -> [T', 2z, H/8, W/8].
    Tensor forward(const Tensor& x, CausalConvCache& cache) const;

  private:
    struct Level {  // 2.2: a Down_ResidualBlock
        std::vector<WanResidualBlock> blocks;
        std::optional<WanResample> downsample;
        std::optional<WanAvgDown3d> shortcut;  // 2.2
    };
    CausalConv3d conv1, head;
    std::vector<Level> levels;
    WanResidualBlock middle0, middle2;
    WanAttentionBlock middle1;
    WanRmsNorm head_norm;
};

class WanVaeDecoder {
  public:
    static WanVaeDecoder load(const Weights& w, const WanVaeConfig& c);  // w = "decoder."
    // One latent frame: [1, z, h, w] -> [1 or 4, 3 patch^2, 8h, 8w] (the first chunk, the
    // clip's first latent frame, gives one frame).
    Tensor forward(const Tensor& x, CausalConvCache& cache, bool first_chunk) const;

  private:
    struct Level {  // 2.2: an Up_ResidualBlock
        std::vector<WanResidualBlock> blocks;
        std::optional<WanResample> upsample;
        std::optional<WanDupUp3d> shortcut;  // 2.2, around the levels that upsample
    };
    CausalConv3d conv1, head;
    WanResidualBlock middle0, middle2;
    WanAttentionBlock middle1;
    std::vector<Level> levels;
    WanRmsNorm head_norm;
};

class WanVae {
  public:
    // w = the VAE's prefix ("first_stage_model."); the encoder is built only when asked.
    static WanVae load(const Weights& w, bool with_encoder);

    // Video [T, colors, H, W] in [-1, 1] (T = 1 + 4k; an image is T = 1) -> the posterior's
    // mean [1 + k, z, H/s, W/s], s = config().scale() (2.2: H and W multiples of 16).
    Tensor encode(const Tensor& video) const;
    // Latents [T, z, h, w] -> frames [1 + 4 (T - 1), colors, s h, s w].
    Tensor decode(const Tensor& latent) const;

    bool has_encoder() const { return encoder_.has_value(); }
    const WanVaeConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    WanVaeConfig config_;
    std::optional<CausalConv3d> conv1_;  // after the encoder: 2z -> 2z
    CausalConv3d conv2_;                 // before the decoder: z -> z
    WanVaeDecoder decoder_;
    std::optional<WanVaeEncoder> encoder_;
    WeightPages pages_;
};

}  // namespace sd
