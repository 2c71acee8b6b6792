#include "families/parts/kl_vae.h"

#include <algorithm>
#include <cmath>

#include "gpu/device_tensor.h"
#include "pipeline/vae_tiling.h"

namespace sd {

Tensor KlVaeCodec::encode(const Tensor& image01, Rng& rng) const {
    auto [moments_mean, moments_logvar] = vae_.encode(image01 * 2.0f + -1.0f);
    if (!sample_posterior_) return moments_mean;
    // The posterior is drawn on the host (the encoder may have run on a device).
    const Tensor mean = gpu::to_host(moments_mean), logvar = gpu::to_host(moments_logvar);
    std::vector<float> noise = rng.randn(static_cast<size_t>(mean.numel()));
    Tensor out = Tensor::empty(mean.shape());
    const float* mu = mean.data<float>();
    const float* lv = logvar.data<float>();
    float* o = out.data<float>();
    for (int64_t i = 0; i < out.numel(); ++i) {
        float std_dev = std::exp(0.5f * std::clamp(lv[i], -30.0f, 20.0f));
        o[i] = mu[i] + std_dev * noise[static_cast<size_t>(i)];
    }
    return out;
}

Tensor KlVaeCodec::decode(const Tensor& latent, const VaeTiling& tiling) const {
    return tiling.enabled ? decode_tiled(vae_, latent, tiling.tile_size, tiling.overlap)
                          : vae_.decode(latent);
}

std::unique_ptr<KlVaeCodec> load_kl_vae(const ModelFiles& files, const LoadOptions& options,
                                        bool sample_posterior) {
    return std::make_unique<KlVaeCodec>(
        AutoencoderKL::load(Weights(files, "first_stage_model.", options.memory.residency),
                            options.with_vae_encoder),
        sample_posterior);
}

}  // namespace sd
