// One generation request as the loop runs it, every default settled (api/image_request
// resolves the C API's parameters into it, once): prompts, size, sampler, seeds, input
// images, guidance options. A value: the pipeline's stages read it and never change it.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "image/image_io.h"
#include "pipeline/components.h"
#include "pipeline/hires.h"
#include "sampling/cache_params.h"
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
    // A flow model's shift for this generation (--flow-shift); INFINITY: the model's own.
    float flow_shift = INFINITY;
    std::vector<float> custom_sigmas;
    int64_t seed = 42;  // image i of the batch uses seed + i
    int batch_count = 1;
    // Qwen-Image-Layered's RGBA layers (qwen_image_layers, ModelComponents::rgba_layers): the
    // model makes layers + 1 images a seed, the composite first; other models ignore it.
    int layers = 3;
    // A video of this many frames (1 + 4k, the video VAEs' grid; settled), made by a video
    // model (ModelComponents::video) and returned frame by frame; 0: an image.
    int frames = 0;
    RngType rng = CUDA_RNG;
    RngType sampler_rng = RNG_TYPE_COUNT;
    std::optional<image::Image> init_image;  // img2img / inpaint; a video's first frame
    std::optional<image::Image> end_image;   // a video's last frame (--end-img, FLF2V)
    // A control-video model's clip (Wan VACE, --control-video): frames in order, fitted to
    // width x height (fewer than `frames`: the rest grey); the strength of its hints.
    std::vector<image::Image> control_frames;
    float control_video_strength = 1.0f;
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
    // A two-expert model's (ModelComponents::high_noise_diffusion) high-noise stage, as the
    // reference's SamplePlan: with steps >= 0 the schedule has steps + high_noise.steps
    // sigmas and this stage takes the first high_noise.steps; with steps < 0 the schedule's
    // steps up to the first sigma below `boundary` (--moe-boundary). Its sampler, CFG scale
    // and eta are its own; the scheduler and the conditioning are the request's.
    struct HighNoiseStage {
        SampleMethod method = EULER_SAMPLE_METHOD;
        int steps = -1;
        float cfg_scale = 7.0f;
        float eta = INFINITY;
        float boundary = 0.875f;
    } high_noise;
    // The step cache (--cache-mode, sampling/step_cache.h); each sampling run starts afresh.
    StepCacheParams cache;
};

constexpr size_t kMaxPromptBytesPerToken = 32;

}  // namespace sd
