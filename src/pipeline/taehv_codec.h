// TAEHV as a video model's latent codec (--taesd with a taew2_1 / taew2_2 file): it replaces
// the Wan VAE for the decode (and the encode of a given frame), or serves the step previews
// only, as the reference. Like TaesdCodec it maps the loop's codec-space latents through the
// family's LatentFormat to the diffusion model's own, which TAEHV reads: an image is a
// one-frame clip, a video latent [1, z, T, h, w] decodes to 1 + 4 (T - 1) frames.
#pragma once

#include <memory>
#include <string>

#include "io/model_files.h"
#include "models/taehv.h"
#include "pipeline/components.h"

namespace sd {

class TaehvCodec : public LatentCodec {
  public:
    TaehvCodec(ModelFiles files, Taehv tae, LatentFormat format);
    // An image [1, 3, H, W] -> [1, z, h, w]; a clip [1, 3, F, H, W] -> [1, z, ceil(F / 4), h,
    // w]. No posterior: `rng` draws nothing.
    Tensor encode(const Tensor& image01, Rng& rng) const override;
    // An image's latent [1, z, h, w] -> [1, 3, H, W]; a video's [1, z, T, h, w] -> its frames
    // [F, 3, H, W], in [-1, 1]. Images tile as TAESD's when asked; a clip decodes whole.
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override;
    bool has_encoder() const override { return tae_.has_encoder(); }
    void release_weights() const override { tae_.release_weights(); }
    const Taehv& taehv() const { return tae_; }

  private:
    ModelFiles files_;  // the TAEHV file, mapped while the codec lives
    Taehv tae_;
    LatentFormat format_;
};

// --taesd's file for a model whose latents have `format`: a TAEHV (decoder.1.weight) as a
// TaehvCodec, else a TAESD (load_taesd_codec). The latent widths must agree; a video model
// takes a TAEHV only. The encoder is built too when the file has one.
std::unique_ptr<LatentCodec> load_tiny_codec(const std::string& path, const LatentFormat& format,
                                             bool video, Residency residency);

}  // namespace sd
