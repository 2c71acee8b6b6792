// The C API's one request resolver: sd_img_gen_params_t (and the fields sd_vid_gen_params_t
// shares with it) become the settled sd::ImageRequest here, once. Each default is computed
// in one function:
//   seed            settle_seed: the given one, a random one for < 0 (sampling/rng.h); image
//                   i of a batch: sd::batch_image_seed (exported as sd_batch_image_seed)
//   size            settle_size: aligned up to the model's grid (pipeline/image_size.h)
//   sampler         default_sample_method, default_scheduler (behind sd_get_default_*)
//   steps           settle_sampling: custom sigmas give their count - 1
//   flow shift      settle_sampling: INFINITY (the model's own) where the model has none
//   prompt limits   the context's max_prompt_tokens, checked by settle_request
//                   (pipeline/prompt_length.h)
// sd_settle_img_gen_params writes the settled values back (write_back) for the programs to
// report; a request built from settled parameters settles to the same request.
#pragma once

#include <cstdint>
#include <vector>

#include "adapters/lora_apply.h"
#include "families/registry.h"
#include "pipeline/request.h"
#include "stable-diffusion.h"

namespace sd::api {

// What of a context the resolver reads (all set when the context was made).
struct RequestContext {
    const LoadedModel& model;
    RngType rng = CUDA_RNG;
    RngType sampler_rng = RNG_TYPE_COUNT;
    int max_prompt_tokens = 0;  // <= 0: no limit
};

// The model's preferred sampling method (its family's; euler_a without a model).
SampleMethod default_sample_method(const LoadedModel* model);
// The reference's order: an EDM v-prediction model takes exponential; lcm and tcd the LCM
// schedule; ddim_trailing the simple one; then the family's own (discrete without a model).
Scheduler default_scheduler(const LoadedModel* model, SampleMethod method);

int64_t settle_seed(int64_t seed);
// Throws sd::Error for a side that is not positive or too large.
void settle_size(const ModelComponents& model, int& width, int& height);

struct SettledSampling {
    SampleMethod method = EULER_A_SAMPLE_METHOD;
    Scheduler scheduler = DISCRETE_SCHEDULER;  // resolved also with custom sigmas (unused then)
    int steps = 20;
    float flow_shift = INFINITY;
};
// sample_params' method (SAMPLE_METHOD_COUNT: the model's), scheduler (SCHEDULER_COUNT: the
// model's for that method), steps and flow shift, with the reference's warnings. Throws
// sd::Error for a method or scheduler out of range.
SettledSampling settle_sampling(const LoadedModel& model, const sd_sample_params_t& s);

// Options this build does not have are refused, naming them.
void reject_unbuilt(const sd_img_gen_params_t& p);

// The settled request. Throws sd::Error naming the field or option of a bad request.
ImageRequest to_request(const RequestContext& ctx, const sd_img_gen_params_t& p);

// The settled values into the parameters: seed, width, height, sample method, scheduler
// (unless custom sigmas replace it), steps, flow shift, the hires target size.
void write_back(const ImageRequest& r, sd_img_gen_params_t& p);

// The settled request of a video (ImageRequest::frames, aligned down to 1 + 4k with a
// warning). Throws sd::Error naming the option of a bad request or one of a video variant this
// build does not run (an init or end image, control frames), and for an image model.
ImageRequest to_video_request(const RequestContext& ctx, const sd_vid_gen_params_t& p);

// sd_vid_gen_params_t settled in place (seed, size, frames, sample_params,
// high_noise_sample_params' method).
void settle_vid_gen_params(const RequestContext& ctx, sd_vid_gen_params_t& p);

// The LoRAs of a request (sd_img_gen_params_t's or sd_vid_gen_params_t's). High-noise ones
// patch a two-expert model's high-noise expert (Wan2.2 A14B); a model without one ignores
// them with a warning.
std::vector<LoraRequest> lora_requests(const sd_lora_t* loras, uint32_t count,
                                       const ModelComponents& m);

}  // namespace sd::api
