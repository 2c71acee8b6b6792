// The hires fix, as stable-diffusion.cpp runs it: the first pass's latent upscaled to the
// target size - in latent space (Latent: bilinear, nearest, nearest-exact, antialiased,
// bicubic, bicubic antialiased) or in image space (decode; Lanczos, Nearest or an ESRGAN
// model then a nearest resize to the target; encode) - then denoised again from part-way
// down a longer schedule, so that exactly `steps` steps run (the webui's rule: the
// schedule has steps / strength steps, of which the last strength part is sampled).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pipeline/components.h"
#include "stable-diffusion.h"

namespace sd {

struct HiresRequest {
    bool enabled = false;
    sd_hires_upscaler_t upscaler = SD_HIRES_UPSCALER_LATENT;
    std::string model_path;  // SD_HIRES_UPSCALER_MODEL: an ESRGAN file
    int target_width = 0, target_height = 0;
    int steps = 0;  // 0: the first pass's
    float denoising_strength = 0.7f;
    int upscale_tile_size = 128;
    std::vector<float> custom_sigmas;  // used when it holds at least two values
};

// The reference's target: both sizes given, one given (square), or round(size * scale);
// aligned up to a multiple of `factor` (with a warning). Throws when the target is not
// positive.
void resolve_hires_target(HiresRequest& h, int width, int height, float scale, int64_t factor);

// The latent upscale of a latent-space upscaler: [1, C, h, w] -> [1, C, th, tw].
Tensor upscale_latent(const Tensor& latent, sd_hires_upscaler_t upscaler, int64_t th, int64_t tw);

// The sigmas of the second pass (`d`: the run's denoiser) (see above), for `first_steps` steps of
// the first pass.
std::vector<float> hires_sigmas(const ModelComponents& m, const Denoiser& d, const HiresRequest& h,
                                Scheduler scheduler, int first_steps);

// Runs the sampler from x (already noised) over sigmas; the generation loop's sampler with
// its guidance and progress.
using SampleFn = std::function<Tensor(const Tensor& x, const std::vector<float>& sigmas, Rng& rng)>;

// The second pass on the first pass's clean model-space latent x0 for the image of `seed`:
// returns the new clean latent at the target size.
// Image-space upscalers decode and encode with `tiling` (as the final decode).
Tensor hires_pass(const ModelComponents& m, const Denoiser& d, const HiresRequest& h,
                  Scheduler scheduler, int first_steps, RngType rng, RngType sampler_rng,
                  int64_t seed, const Tensor& x0, const VaeTiling& tiling, const SampleFn& sample);

}  // namespace sd
