#include "families/parts/pixel_codec.h"

#include "base/error.h"
#include "ops/elementwise.h"

namespace sd {

Tensor PixelCodec::encode(const Tensor& image01, Rng& rng) const {
    (void)rng;
    SD_CHECK(image01.dim() == 4 && image01.size(1) == 3, "pixel codec: image %s, want [1, 3, H, W]",
             image01.describe().c_str());
    return add_scalar(scale(image01, 2.0f), -1.0f);
}

Tensor PixelCodec::decode(const Tensor& latent, const VaeTiling& tiling) const {
    (void)tiling;  // nothing to tile: the latent is the picture
    SD_CHECK(latent.dim() == 4 && latent.size(1) == 3, "pixel codec: latent %s, want [1, 3, H, W]",
             latent.describe().c_str());
    return latent.contiguous();
}

}  // namespace sd
