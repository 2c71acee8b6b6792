// The Wan 2.1 / 2.2 VAE as a latent codec (Wan's and Qwen-Image's): an image is a one-frame clip, a
// video latent [1, z, T, h, w] decodes to 1 + 4 (T - 1) frames; encode gives the posterior's
// mean (Wan's encode has no sampling), loaded from first_stage_model.*. The per-channel
// normalisation is the family's LatentFormat, with the statistics below.
#pragma once

#include <memory>

#include "families/family.h"
#include "models/wan_vae.h"

namespace sd {

// Wan 2.1's latent statistics (its vae.py): model[c] = (codec[c] - mean[c]) / std[c].
inline constexpr float kWan21LatentMean[16] = {
    -0.7571f, -0.7089f, -0.9113f, 0.1075f,  -0.1745f, 0.9653f,  -0.1517f, 1.5508f,
    0.4134f,  -0.0715f, 0.5517f,  -0.3632f, -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
inline constexpr float kWan21LatentStd[16] = {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f,
                                              2.6052f, 2.0743f, 3.2687f, 2.1526f, 2.8652f, 1.5579f,
                                              1.6382f, 1.1253f, 2.8251f, 1.9160f};

// Wan 2.2's (the TI2V-5B VAE's 48 channels, its vae2_2.py), used the same way.
inline constexpr float kWan22LatentMean[48] = {
    -0.2289f, -0.0052f, -0.1323f, -0.2339f, -0.2799f, 0.0174f,  0.1838f,  0.1557f,
    -0.1382f, 0.0542f,  0.2813f,  0.0891f,  0.1570f,  -0.0098f, 0.0375f,  -0.1825f,
    -0.2246f, -0.1207f, -0.0698f, 0.5109f,  0.2665f,  -0.2108f, -0.2158f, 0.2502f,
    -0.2055f, -0.0322f, 0.1109f,  0.1567f,  -0.0729f, 0.0899f,  -0.2799f, -0.1230f,
    -0.0313f, -0.1649f, 0.0117f,  0.0723f,  -0.2839f, -0.2083f, -0.0520f, 0.3748f,
    0.0152f,  0.1957f,  0.1433f,  -0.2944f, 0.3573f,  -0.0548f, -0.1681f, -0.0667f};
inline constexpr float kWan22LatentStd[48] = {
    0.4765f, 1.0364f, 0.4514f, 1.1677f, 0.5313f, 0.4990f, 0.4818f, 0.5013f, 0.8158f, 1.0344f,
    0.5894f, 1.0901f, 0.6885f, 0.6165f, 0.8454f, 0.4978f, 0.5759f, 0.3523f, 0.7135f, 0.6804f,
    0.5833f, 1.4146f, 0.8986f, 0.5659f, 0.7069f, 0.5338f, 0.4889f, 0.4917f, 0.4069f, 0.4999f,
    0.6866f, 0.4093f, 0.5709f, 0.6065f, 0.6415f, 0.4944f, 0.5726f, 1.2042f, 0.5458f, 1.6887f,
    0.3971f, 1.0600f, 0.3943f, 0.5537f, 0.5444f, 0.4089f, 0.7468f, 0.7744f};

// What a Wan 2.1 decode holds a frame pixel (the families' footprint), measured at 416x240 x 5
// frames: 3.1 GB above the weights untiled, 0.8 / 1.4 GB in tiles of 16 / 24 latent pixels;
// mostly every causal conv's two cached frames and the 4-frame chunk's stacked window.
// Taken as Wan 2.2's too.
inline constexpr double kWanDecodeBytesPerPixel = 30000;

class WanVaeCodec : public LatentCodec {
  public:
    explicit WanVaeCodec(WanVae vae) : vae_(std::move(vae)) {}
    // An image [1, c, H, W] -> [1, z, h, w]; a clip [1, c, 1 + 4k, H, W] -> [1, z, 1 + k, h, w]
    // (c = image_channels()).
    Tensor encode(const Tensor& image01, Rng& rng) const override;
    // An image's latent [1, z, h, w] -> [1, c, H, W]; a video's [1, z, T, h, w] -> its frames
    // [F, c, H, W]; tiled, every frame in the same spatial tiles.
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override;
    bool has_encoder() const override { return vae_.has_encoder(); }
    int64_t image_channels() const override { return vae_.config().colors; }
    void release_weights() const override { vae_.release_weights(); }
    size_t weight_bytes() const override { return vae_.weight_pages().bytes(); }
    const WanVae& vae() const { return vae_; }

  private:
    WanVae vae_;
};

// The Wan VAE under first_stage_model. (its encoder when options.with_vae_encoder), refused by
// name unless its frames have `colors` channels (3: RGB; 4: Qwen-Image-Layered's RGBA VAE).
std::unique_ptr<WanVaeCodec> load_wan_vae(const ModelFiles& files, const LoadOptions& options,
                                          int64_t colors = 3);

}  // namespace sd
