// How a family's diffusion latents relate to its codec's (the VAE's own latents), and the
// quick latent -> RGB map of its previews. Two forms, as the reference normalises them:
//
//   scalar       model = (codec - shift) * scale                   SD 1.x/2.x/XL, SD3, FLUX.1
//   per-channel  model[c] = (codec[c] - mean[c]) * scale / std[c]   Wan / Qwen-Image, FLUX.2
//
// and, before either, an optional patchify: the codec latent's p x p neighbourhoods folded
// into channels ([C, H, W] -> [C*p*p, H/p, W/p], channel index c*p*p + i*p + j), so that a
// family whose DiT reads 2x2-patched latents (FLUX.2: 32 -> 128 channels) normalises them
// with one statistic per patched channel. `channels` and `factor` describe the model's side.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace sd {

// A family's linear latent -> RGB map for quick previews (the reference's latent-preview.h):
// rgb = sum_c latent[c] * weights[c] + bias on the model's latents, roughly in [-1, 1].
struct LatentRgbProjection {
    const float (*weights)[3] = nullptr;  // [channels][3]; nullptr: the family has none
    std::array<float, 3> bias{};
};

struct LatentFormat {
    int64_t channels = 4;  // the diffusion model's latent channels
    int64_t factor = 8;    // image pixels per model latent pixel
    float scale = 0.18215f;
    float shift = 0.0f;  // the scalar form's; unused when `mean` is given
    LatentRgbProjection rgb;
    // The per-channel form: one value per model channel each (static tables of the family).
    std::span<const float> mean{};
    std::span<const float> std{};
    int64_t patch = 1;  // the codec latent's patch side folded into channels

    bool per_channel() const { return !mean.empty(); }
    int64_t codec_channels() const { return channels / (patch * patch); }
    int64_t codec_factor() const { return factor / patch; }
};

// Codec latents [B, C, H, W] (a video's [1, C, T, H, W], unpatched formats only) <-> the
// diffusion model's, by the format above. Throws sd::Error
// naming the shapes when a latent does not fit the format (channels, sides not a multiple
// of the patch).
Tensor to_model_latent(const LatentFormat& format, const Tensor& z);
Tensor to_codec_latent(const LatentFormat& format, const Tensor& x);

// The model latent's pixel count for an image size, (height / factor) * (width / factor): the
// image_seq_len the reference gives its size-dependent schedulers (flux, flux2, ltx2).
inline int latent_tokens(const LatentFormat& format, int64_t width, int64_t height) {
    return static_cast<int>((height / format.factor) * (width / format.factor));
}

}  // namespace sd
