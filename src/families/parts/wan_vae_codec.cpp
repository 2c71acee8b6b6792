#include "families/parts/wan_vae_codec.h"

#include "base/error.h"
#include "ops/ops.h"
#include "pipeline/vae_tiling.h"

namespace sd {

Tensor WanVaeCodec::encode(const Tensor& image01, Rng& /*rng: the mean is taken*/) const {
    SD_CHECK(image01.size(0) == 1, "the Wan VAE encodes one image or clip at a time, not %lld",
             static_cast<long long>(image01.size(0)));
    if (image01.dim() == 5) {  // a clip [1, 3, F, H, W]: the encoder's frames first, and back
        const int64_t C = image01.size(1), F = image01.size(2), H = image01.size(3),
                      W = image01.size(4);
        const Tensor frames =
            permute_copy(image01, {0, 2, 1, 3, 4}).view({F, C, H, W}) * 2.0f + -1.0f;
        const Tensor z = vae_.encode(frames);  // [T, z, h, w]
        return permute_copy(z.view({1, z.size(0), z.size(1), z.size(2), z.size(3)}),
                            {0, 2, 1, 3, 4});
    }
    return vae_.encode(image01 * 2.0f + -1.0f);
}

Tensor WanVaeCodec::decode(const Tensor& latent, const VaeTiling& tiling) const {
    // A video's latent [1, z, T, h, w] goes frames first, [T, z, h, w], as the decoder's
    // activations; an image's [1, z, h, w] is a one-frame clip, decoded to one frame.
    Tensor z = latent;
    if (latent.dim() == 5) {
        SD_CHECK(latent.size(0) == 1, "the Wan VAE decodes one video at a time");
        z = permute_copy(latent, {0, 2, 1, 3, 4})
                .view({latent.size(2), latent.size(1), latent.size(3), latent.size(4)});
    }
    if (!tiling.enabled) return vae_.decode(z);
    // Each tile is a whole clip of its pixels, through the decoder's own frame cache.
    return decode_tiled([&](const Tensor& tile) { return vae_.decode(tile); }, z, tiling.tile_size,
                        tiling.overlap);
}

std::unique_ptr<WanVaeCodec> load_wan_vae(const ModelFiles& files, const LoadOptions& options,
                                          int64_t colors) {
    auto codec = std::make_unique<WanVaeCodec>(WanVae::load(
        Weights(files, "first_stage_model.", options.memory.residency), options.with_vae_encoder));
    const int64_t got = codec->vae().config().colors;
    auto kind = [](int64_t c) { return c == 4 ? "RGBA (Qwen-Image-Layered's VAE)" : "RGB"; };
    SD_CHECK(got == colors, "the Wan VAE in %s makes %s images; this model needs %s ones",
             files.source_of("first_stage_model.decoder.head.2.weight").c_str(), kind(got),
             kind(colors));
    return codec;
}

}  // namespace sd
