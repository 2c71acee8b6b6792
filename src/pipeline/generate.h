// Image generation over a family's components: txt2img, img2img, inpainting (with inpaint
// checkpoints and with ordinary ones), batches, guidance; the same steps, in the same order
// and with the same random draws, as stable-diffusion.cpp's generate_image.
#pragma once

#include <atomic>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "pipeline/components.h"
#include "pipeline/hires.h"
#include "pipeline/image_tensor.h"
#include "sampling/samplers.h"

namespace sd {

// One settled request: every default already resolved (sampler, scheduler, seed).
struct ImageRequest {
    std::string prompt, negative_prompt;
    int clip_skip = -1;
    int width = 512, height = 512;
    SampleMethod method = EULER_A_SAMPLE_METHOD;
    Scheduler scheduler = DISCRETE_SCHEDULER;
    int steps = 20;
    float cfg_scale = 7.0f;
    float guidance = 3.5f;  // distilled guidance, for models with a guidance input (FLUX.1-dev)
    float eta = INFINITY;
    float flow_shift = INFINITY;  // a flow model's shift for this run; INFINITY: the model's own
    std::vector<float> custom_sigmas;
    int64_t seed = 42;  // image i of the batch uses seed + i
    int batch_count = 1;
    RngType rng = CUDA_RNG;
    RngType sampler_rng = RNG_TYPE_COUNT;
    std::optional<image::Image> init_image;  // img2img / inpaint
    std::optional<image::Image> mask_image;  // inpaint: white = repaint
    float strength = 0.75f;
    // ControlNet: the hint image (fitted to width x height when its size differs) and the
    // strength its residuals are added with; used when the model has a control model.
    std::optional<image::Image> control_image;
    float control_strength = 0.9f;
    // Reference images (edit models, pipeline/ref_images.h), at their own size, and the
    // --ref-image-args that say how they are prepared (over the family's preset).
    std::vector<image::Image> ref_images;
    std::string ref_image_args;
    VaeTiling vae_tiling;
    HiresRequest hires;  // the hires fix's second pass (pipeline/hires.h)
    // The most tokens the prompt and the negative prompt may each have (0: no limit); their
    // bytes are checked first (kMaxPromptBytesPerToken a token) so that a huge prompt is
    // refused without tokenizing it.
    int max_prompt_tokens = 0;
    // Skip-layer guidance (SD3.5): on steps strictly between start and end (fractions of the
    // sigma count, as the reference counts them) a third pass of the positive conditioning
    // without `layers` pushes the prediction away from it: out += (cond - skipped) * scale.
    // Off when scale is 0 or no layers are given.
    struct SkipLayerGuidance {
        std::vector<int> layers;
        float start = 0.01f, end = 0.2f, scale = 0.0f;
        bool active() const { return scale != 0.0f && !layers.empty(); }
    } slg;
};

constexpr size_t kMaxPromptBytesPerToken = 32;

// A look at the latents while sampling (previews), as the reference takes it: the model's
// scaled input x * c_in before an evaluation (noisy) and the denoised prediction after it,
// on evaluations whose step (DenoiseCall::step) is a multiple of `interval`. Latents are in
// the model's space, [1, C, h, w]; what to make of them is the callee's business.
struct LatentTap {
    std::function<void(int step, const Tensor& latent, bool noisy)> fn;
    int interval = 1;
    bool noisy = false;
    bool denoised = false;
    bool wants(int step, bool is_noisy) const {
        return fn && (is_noisy ? noisy : denoised) && interval > 0 && step % interval == 0;
    }
};

struct GenerationHooks {
    // Called after every sampling step: (step, steps, seconds since sampling started).
    std::function<void(int step, int steps, float seconds)> progress;
    // Stops the generation wherever it is (sd::Cancelled): installed as the thread's current
    // token (base/cancel.h), so text encoding, every op of a step and the decode's tiles see it.
    const CancelToken* cancel = nullptr;
    // Set: the image being sampled is finished, no further image of the batch is started.
    const std::atomic<bool>* stop_after_image = nullptr;
    LatentTap preview;
};

// Codec latents <-> the diffusion model's: (z - shift) * scale and back.
Tensor to_model_latent(const LatentFormat& format, const Tensor& z);
Tensor to_codec_latent(const LatentFormat& format, const Tensor& x);

// The decode's tiling: the requested one, or in the streamed (low-memory) mode tiles for an
// image above 640x640, since an untiled decode holds several full-resolution feature maps
// (about 2.6 GiB of activations at 1024x1024).
VaeTiling decode_tiling(const ModelComponents& model, const VaeTiling& requested, int64_t latent_h,
                        int64_t latent_w);

// Codec latents <-> the diffusion model's: (z - shift) * scale and back.
Tensor to_model_latent(const LatentFormat& f, const Tensor& z);
Tensor to_codec_latent(const LatentFormat& f, const Tensor& x);

// The allocator cache a generation keeps while sampling or decoding (see CacheBudget).
size_t cache_bytes_for(const ModelComponents& model, bool decoding);

// The request as it runs, as the reference settles it: the prompts' length checked
// (pipeline/prompt_length.h), the size aligned up to the model's grid (pipeline/image_size.h,
// with a warning; a no-op for a request the C API settled), the estimated peak memory checked
// against the machine's (pipeline/memory_estimate.h) before anything is allocated, and the
// init image, mask and control image fitted to the size. Idempotent: a settled request
// settles to itself. Throws sd::Error on a bad request.
ImageRequest settle_request(const ModelComponents& model, const ImageRequest& request);

// Settles the request (settle_request) and runs it.
// Throws sd::Error on bad requests and sd::Cancelled when hooks.cancel is cancelled.
std::vector<image::Image> generate_images(const ModelComponents& model, const ImageRequest& request,
                                          const GenerationHooks& hooks = {});

}  // namespace sd
