// The codec of a model that diffuses the image itself (Chroma-Radiance; the reference's
// FakeVAE): its latent is the picture in [-1, 1], three channels at full size.
#pragma once

#include "families/family.h"

namespace sd {

class PixelCodec : public LatentCodec {
  public:
    Tensor encode(const Tensor& image01, Rng& rng) const override;
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override;
    bool has_encoder() const override { return true; }
    void release_weights() const override {}
};

}  // namespace sd
