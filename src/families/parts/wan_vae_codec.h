// The Wan 2.1 VAE as an image family's latent codec (Qwen-Image's): an image is a one-frame
// clip; encode gives the posterior's mean (Wan's encode has no sampling), loaded from
// first_stage_model.*. The per-channel normalisation is the family's LatentFormat.
#pragma once

#include <memory>

#include "families/family.h"
#include "models/wan_vae.h"

namespace sd {

class WanVaeCodec : public LatentCodec {
  public:
    explicit WanVaeCodec(WanVae vae) : vae_(std::move(vae)) {}
    Tensor encode(const Tensor& image01, Rng& rng) const override;
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
