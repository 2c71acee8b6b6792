#include "pipeline/hires.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/log.h"
#include "ops/ops.h"
#include "pipeline/decode_tiling.h"
#include "pipeline/image_size.h"
#include "pipeline/model_sigmas.h"
#include "pipeline/upscaler.h"
#include "sampling/samplers.h"
#include "tensor/caching_allocator.h"

namespace sd {
namespace {

bool is_latent_upscaler(sd_hires_upscaler_t u) {
    return u == SD_HIRES_UPSCALER_LATENT || u == SD_HIRES_UPSCALER_LATENT_NEAREST ||
           u == SD_HIRES_UPSCALER_LATENT_NEAREST_EXACT ||
           u == SD_HIRES_UPSCALER_LATENT_ANTIALIASED || u == SD_HIRES_UPSCALER_LATENT_BICUBIC ||
           u == SD_HIRES_UPSCALER_LATENT_BICUBIC_ANTIALIASED;
}

// decode -> Lanczos / nearest / ESRGAN (+ nearest to the target) -> encode.
Tensor upscale_in_image_space(const ModelComponents& m, const HiresRequest& h, const Tensor& x0,
                              Rng& rng, const VaeTiling& tiling) {
    SD_CHECK(m.codec->has_encoder(),
             "hires upscaler %s works on the image and needs the VAE encoder, which was not "
             "loaded",
             sd_hires_upscaler_name(h.upscaler));
    const Tensor z = to_codec_latent(m.latent, x0);
    Tensor image = m.codec->decode(z, decode_tiling(m, tiling, z.size(2), z.size(3)));
    image = clamp(add_scalar(image, 1.0f) * 0.5f, 0.0f, 1.0f);  // [-1, 1] -> [0, 1]
    if (h.upscaler == SD_HIRES_UPSCALER_MODEL) {
        SD_CHECK(!h.model_path.empty(), "hires upscaler Model needs a model file");
        const Upscaler upscaler(h.model_path, h.upscale_tile_size, m.memory.residency);
        image = upscaler.upscale_tensor(image);
        image = interpolate(image, h.target_height, h.target_width, InterpolateMode::Nearest);
    } else {
        const InterpolateMode mode = h.upscaler == SD_HIRES_UPSCALER_LANCZOS
                                         ? InterpolateMode::Lanczos
                                         : InterpolateMode::Nearest;
        image = clamp(interpolate(image, h.target_height, h.target_width, mode), 0.0f, 1.0f);
    }
    CachingAllocator::instance().trim();
    return to_model_latent(m.latent, m.codec->encode(image, rng));
}

}  // namespace

void resolve_hires_target(HiresRequest& h, int width, int height, float scale, int64_t factor) {
    if (h.target_width > 0 && h.target_height <= 0) h.target_height = h.target_width;
    if (h.target_height > 0 && h.target_width <= 0) h.target_width = h.target_height;
    if (h.target_width <= 0 && h.target_height <= 0) {
        h.target_width = static_cast<int>(std::round(static_cast<float>(width) * scale));
        h.target_height = static_cast<int>(std::round(static_cast<float>(height) * scale));
    }
    SD_CHECK(h.target_width > 0 && h.target_height > 0,
             "the hires target %dx%d (from %dx%d, scale %g) is empty", h.target_width,
             h.target_height, width, height, scale);
    align_size_up(h.target_width, h.target_height, factor, "hires target");
    h.denoising_strength = std::clamp(h.denoising_strength, 0.0001f, 1.0f);
    h.steps = std::max(0, h.steps);
}

Tensor upscale_latent(const Tensor& latent, sd_hires_upscaler_t upscaler, int64_t th, int64_t tw) {
    switch (upscaler) {
        case SD_HIRES_UPSCALER_LATENT:
            return interpolate(latent, th, tw, InterpolateMode::Bilinear);
        case SD_HIRES_UPSCALER_LATENT_NEAREST:
            return interpolate(latent, th, tw, InterpolateMode::Nearest);
        case SD_HIRES_UPSCALER_LATENT_NEAREST_EXACT:
            return interpolate(latent, th, tw, InterpolateMode::NearestExact);
        case SD_HIRES_UPSCALER_LATENT_ANTIALIASED:
            return interpolate(latent, th, tw, InterpolateMode::Bilinear, true);
        case SD_HIRES_UPSCALER_LATENT_BICUBIC:
            return interpolate(latent, th, tw, InterpolateMode::Bicubic);
        case SD_HIRES_UPSCALER_LATENT_BICUBIC_ANTIALIASED:
            return interpolate(latent, th, tw, InterpolateMode::Bicubic, true);
        default:
            fail("hires upscaler %s does not work on latents", sd_hires_upscaler_name(upscaler));
    }
}

std::vector<float> hires_sigmas(const ModelComponents& m, const Denoiser& d, const HiresRequest& h,
                                Scheduler scheduler, int first_steps) {
    if (h.custom_sigmas.size() >= 2)
        return custom_sigmas(h.custom_sigmas.data(), static_cast<int>(h.custom_sigmas.size()));
    const int steps = std::max(1, h.steps > 0 ? h.steps : first_steps);
    const int total =
        std::max(1, static_cast<int>(static_cast<float>(steps) / h.denoising_strength));
    const std::vector<float> sigmas =
        model_sigmas(m, d, scheduler, total, h.target_width, h.target_height);
    int t_enc = static_cast<int>(static_cast<float>(total) * h.denoising_strength);
    t_enc = std::min(t_enc, total - 1);
    return std::vector<float>(sigmas.begin() + (total - t_enc - 1), sigmas.end());
}

Tensor hires_pass(const ModelComponents& m, const Denoiser& d, const HiresRequest& h,
                  Scheduler scheduler, int first_steps, RngType rng, RngType sampler_rng,
                  int64_t seed, const Tensor& x0, const VaeTiling& tiling, const SampleFn& sample) {
    SD_CHECK(h.upscaler != SD_HIRES_UPSCALER_NONE && h.upscaler < SD_HIRES_UPSCALER_COUNT,
             "hires upscaler %s cannot upscale", sd_hires_upscaler_name(h.upscaler));
    const int64_t f = m.latent.factor, th = h.target_height / f, tw = h.target_width / f;
    SD_LOG_INFO("hires fix: %s upscale %lldx%lld -> %dx%d", sd_hires_upscaler_name(h.upscaler),
                (long long)(x0.size(3) * f), (long long)(x0.size(2) * f), h.target_width,
                h.target_height);
    // The image's seed again, as the reference reseeds before the second pass.
    ImageRngs rngs(rng, sampler_rng, static_cast<uint64_t>(seed));
    const Tensor upscaled = is_latent_upscaler(h.upscaler)
                                ? upscale_latent(x0, h.upscaler, th, tw)
                                : upscale_in_image_space(m, h, x0, rngs.noise(), tiling);
    const std::vector<float> sigmas = hires_sigmas(m, d, h, scheduler, first_steps);
    const Tensor noise = randn_tensor(rngs.noise(), upscaled.shape());
    Tensor x = d.noise_scaling(sigmas.front(), noise, upscaled);
    x = sample(x, sigmas, rngs.sampler());
    return d.inverse_noise_scaling(sigmas.back(), x);
}

}  // namespace sd
