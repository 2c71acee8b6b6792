// The Wan 2.1 VAE as a latent codec (Wan's and Qwen-Image's): an image is a one-frame clip, a
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

class WanVaeCodec : public LatentCodec {
  public:
    explicit WanVaeCodec(WanVae vae) : vae_(std::move(vae)) {}
    Tensor encode(const Tensor& image01, Rng& rng) const override;
    // An image's latent [1, z, h, w] -> [1, 3, H, W]; a video's [1, z, T, h, w] -> its frames
    // [F, 3, H, W] (spatial tiling is for images only).
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override;
    bool has_encoder() const override { return vae_.has_encoder(); }
    void release_weights() const override { vae_.release_weights(); }
    size_t weight_bytes() const override { return vae_.weight_pages().bytes(); }
    const WanVae& vae() const { return vae_; }

  private:
    WanVae vae_;
};

// The Wan VAE under first_stage_model. (its encoder when options.with_vae_encoder).
std::unique_ptr<WanVaeCodec> load_wan_vae(const ModelFiles& files, const LoadOptions& options);

}  // namespace sd
