// The KL-regularised autoencoder (LDM's AutoencoderKL) as a family's latent codec: the VAE
// of SD 1.x/2.x/XL, SD3 and FLUX.1, loaded from first_stage_model.*.
#pragma once

#include <memory>

#include "families/family.h"
#include "models/autoencoder_kl.h"

namespace sd {

// The KL-regularised autoencoder: encode draws from its posterior (mean + std * noise,
// log-variance clamped to [-30, 20], as the reference's get_first_stage_encoding), or, with
// sample_posterior false, takes its mean (FLUX.2's VAE, as the reference).
class KlVaeCodec : public LatentCodec {
  public:
    explicit KlVaeCodec(AutoencoderKL vae, bool sample_posterior = true)
        : vae_(std::move(vae)), sample_posterior_(sample_posterior) {}
    Tensor encode(const Tensor& image01, Rng& rng) const override;
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override;
    bool has_encoder() const override { return vae_.has_encoder(); }
    void release_weights() const override { vae_.release_weights(); }
    size_t weight_bytes() const override { return vae_.weight_pages().bytes(); }
    const AutoencoderKL& vae() const { return vae_; }

  private:
    AutoencoderKL vae_;
    bool sample_posterior_ = true;
};

// The VAE under first_stage_model. (its encoder when options.with_vae_encoder).
std::unique_ptr<KlVaeCodec> load_kl_vae(const ModelFiles& files, const LoadOptions& options,
                                        bool sample_posterior = true);

}  // namespace sd
