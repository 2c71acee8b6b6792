// TAESD as a model's latent codec (--taesd): it replaces the KL VAE for the decode (and the
// encode of img2img), or serves the step previews only. TAESD reads and writes the
// diffusion model's own latents, so the codec maps the loop's codec-space latents through
// the family's LatentFormat, as stable-diffusion.cpp hands TAESD its latents unscaled by
// nothing: decode(z) = taesd((z - shift) * scale), encode(x) = taesd(x) / scale + shift.
#pragma once

#include <memory>
#include <string>

#include "io/model_files.h"
#include "models/taesd.h"
#include "pipeline/components.h"

namespace sd {

class TaesdCodec : public LatentCodec {
  public:
    TaesdCodec(ModelFiles files, Taesd tae, LatentFormat format);
    // No posterior to sample: `rng` draws nothing (as the reference).
    Tensor encode(const Tensor& image01, Rng& rng) const override;
    // Tiled (when asked) in 64-latent-pixel tiles overlapping by half, as the reference.
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override;
    bool has_encoder() const override { return tae_.has_encoder(); }
    void release_weights() const override { tae_.release_weights(); }
    const Taesd& taesd() const { return tae_; }

  private:
    ModelFiles files_;  // the TAESD file, mapped while the codec lives
    Taesd tae_;
    LatentFormat format_;
};

// Opens the TAESD file at `path` for a model whose latents have `format` (the latent widths
// must agree); builds the encoder too when the file has one.
std::unique_ptr<TaesdCodec> load_taesd_codec(const std::string& path, const LatentFormat& format,
                                             Residency residency);

}  // namespace sd
