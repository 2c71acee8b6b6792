// Image generation over a family's components: txt2img, img2img, inpainting (with inpaint
// checkpoints and with ordinary ones), batches, guidance, and text-to-video on a video model's
// 5-D latents; the same steps, in the same order
// and with the same random draws, as stable-diffusion.cpp's generate_image.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "base/cancel.h"
#include "pipeline/components.h"
#include "pipeline/image_tensor.h"
#include "pipeline/request.h"
#include "sampling/samplers.h"

namespace sd {

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

// The allocator cache a generation keeps while sampling or decoding (see CacheBudget).
size_t cache_bytes_for(const ModelComponents& model, bool decoding);
// The cache while sampling `request`: resident, at least one model call's activations (the
// family's footprint at this size), so each step reuses the blocks the last one freed
// instead of mapping and zeroing them again (a FLUX.2-klein pass at 1024x1024 frees more
// than the default 512 MiB; keeping them made it 1.3x faster); streamed, the small default.
size_t sampling_cache_bytes(const ModelComponents& model, const ImageRequest& request);

// A video request's inputs against the model: a video model, an init image only where it
// reads one (image-to-video, VACE), an end image only for I2V / FLF2V, none of the image-only
// inputs (mask, control image, reference images, hires fix, batches). Nothing for an image
// request. Throws sd::Error naming what is refused.
void check_video_request(const ModelComponents& model, const ImageRequest& request);

// The checks before a request runs, on a request whose defaults are settled (the C API's
// resolver, api/image_request.h): the prompts' length (pipeline/prompt_length.h), the size on
// the model's grid (an unsettled size is refused: pipeline/image_size.h aligns it), the
// estimated peak memory checked
// against the machine's (pipeline/memory_estimate.h) before anything is allocated, and the
// init image, mask and control image fitted to the size. Idempotent: a settled request
// settles to itself. Throws sd::Error on a bad request.
ImageRequest settle_request(const ModelComponents& model, const ImageRequest& request);

// Settles the request (settle_request) and runs it: the batch's images, or a video's frames
// (ImageRequest::frames).
// Throws sd::Error on bad requests and sd::Cancelled when hooks.cancel is cancelled.
std::vector<image::Image> generate_images(const ModelComponents& model, const ImageRequest& request,
                                          const GenerationHooks& hooks = {});

}  // namespace sd
