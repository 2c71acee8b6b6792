#include "families/parts/wan_vae_codec.h"

#include "base/error.h"
#include "pipeline/vae_tiling.h"

namespace sd {

Tensor WanVaeCodec::encode(const Tensor& image01, Rng& /*rng: the mean is taken*/) const {
    SD_CHECK(image01.size(0) == 1, "the Wan VAE encodes one image at a time, not %lld",
             static_cast<long long>(image01.size(0)));
    return vae_.encode(image01 * 2.0f + -1.0f);
}

Tensor WanVaeCodec::decode(const Tensor& latent, const VaeTiling& tiling) const {
    // An image's latent [1, z, h, w] is a one-frame clip, decoded to one frame.
    if (!tiling.enabled) return vae_.decode(latent);
    return decode_tiled([&](const Tensor& tile) { return vae_.decode(tile); }, latent,
                        tiling.tile_size, tiling.overlap);
}

std::unique_ptr<WanVaeCodec> load_wan_vae(const ModelFiles& files, const LoadOptions& options) {
    return std::make_unique<WanVaeCodec>(WanVae::load(
        Weights(files, "first_stage_model.", options.memory.residency), options.with_vae_encoder));
}

}  // namespace sd
