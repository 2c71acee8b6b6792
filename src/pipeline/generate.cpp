#include "pipeline/generate.h"

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "image/image_resize.h"
#include "ops/ops.h"
#include "pipeline/decode_tiling.h"
#include "pipeline/extra_input.h"
#include "pipeline/image_size.h"
#include "pipeline/memory_estimate.h"
#include "pipeline/model_sigmas.h"
#include "pipeline/prompt_length.h"
#include "pipeline/ref_images.h"
#include "pipeline/run_scope.h"
#include "sampling/guidance.h"
#include "sampling/step_cache.h"
#include "tensor/caching_allocator.h"

namespace sd {
namespace {

void check_request(const ImageRequest& r) {
    SD_CHECK(r.steps > 0 || !r.custom_sigmas.empty(), "steps must be at least 1 (got %d)", r.steps);
    SD_CHECK(r.batch_count >= 1, "batch count must be at least 1 (got %d)", r.batch_count);
    // Far beyond any use; the schedule alone would take gigabytes.
    constexpr int kMaxSteps = 10000;
    SD_CHECK(r.steps <= kMaxSteps, "%d steps: at most %d", r.steps, kMaxSteps);
    SD_CHECK(std::isfinite(r.cfg_scale), "cfg scale must be a number");
    SD_CHECK(r.strength >= 0.0f && r.strength <= 1.0f, "strength %g is outside [0, 1]", r.strength);
    SD_CHECK(r.frames >= 0 && (r.frames == 0 || (r.frames - 1) % 4 == 0),
             "%d video frames: a video has 1 + 4k frames (align them first)", r.frames);
}

// The latent frames of `frames` video frames (the video VAEs' 4x in time, the first alone).
int64_t latent_frames(int frames) {
    return 1 + (frames - 1) / 4;
}

// An input image of another size than the generation's is fitted to it, as the reference.
void fit_to_request(std::optional<image::Image>& img, const ImageRequest& r, const char* what) {
    if (!img) return;
    if (static_cast<int64_t>(img->width) == r.width &&
        static_cast<int64_t>(img->height) == r.height)
        return;
    SD_LOG_INFO("resize the %s from %ux%u to %dx%d", what, img->width, img->height, r.width,
                r.height);
    img = image::fit(*img, static_cast<uint32_t>(r.width), static_cast<uint32_t>(r.height));
}

void check_hires(const ModelComponents& m, const ImageRequest& r) {
    // A mask only matters with an init image; a solid one (the CLI's default) repaints all.
    const bool masked = r.init_image && r.mask_image &&
                        std::any_of(r.mask_image->pixels.begin(), r.mask_image->pixels.end(),
                                    [](uint8_t v) { return v < 128; });
    SD_CHECK(!r.hires.enabled || (!masked && m.extra_input == ExtraInput::None),
             "the hires fix does not work with inpainting (a mask or an inpaint model) or a "
             "model conditioned on a control image's latent (FLUX.1 Canny / Depth) yet");
}

// Reference images only where the family takes them; their options are read once here so
// that a bad --ref-image-args is refused before anything runs.
void check_ref_images(const ModelComponents& m, const ImageRequest& r) {
    if (r.ref_images.empty()) return;
    SD_CHECK(m.ref_images.supported || m.ref_images.refusal.empty(), "--ref-image: %s",
             m.ref_images.refusal.c_str());
    SD_CHECK(m.ref_images.supported,
             "--ref-image: %s models take no reference images (edit models such as FLUX.1 "
             "Kontext do)",
             m.family_name.c_str());
    const RefImageParams p = parse_ref_image_args(r.ref_image_args, m.ref_images.preset);
    // A preset that passes them to a model without a vision tower (Qwen-Image-Layered's, as
    // the reference's) is not the user's doing.
    if (p.pass_to_vlm && !m.ref_images.vlm && !ref_image_preset(m.ref_images.preset).pass_to_vlm)
        SD_LOG_WARN("--ref-image-args pass_to_vlm: %s has no vision-language text encoder",
                    m.family_name.c_str());
    if (p.force_ref_timestep_zero)
        SD_LOG_WARN("--ref-image-args force_ref_timestep_zero has no effect on %s",
                    m.family_name.c_str());
    if (!p.pass_to_dit)
        SD_LOG_WARN("--ref-image-args pass_to_dit=false: the reference images are not used");
}

// The request's schedule; a two-expert model's holds its high-noise stage's explicit steps
// too (ImageRequest::HighNoiseStage).
std::vector<float> sigma_schedule(const ModelComponents& m, const Denoiser& d,
                                  const ImageRequest& r) {
    if (!r.custom_sigmas.empty())
        return custom_sigmas(r.custom_sigmas.data(), static_cast<int>(r.custom_sigmas.size()));
    const int high_noise_steps = m.high_noise_diffusion ? std::max(0, r.high_noise.steps) : 0;
    return model_sigmas(m, d, r.scheduler, r.steps + high_noise_steps, r.width, r.height,
                        std::isfinite(r.flow_shift));
}

// How many of the schedule's steps a two-expert model's high-noise expert takes: the explicit
// count, or those before the first sigma below the MoE boundary (none when no sigma is, as
// the reference).
size_t high_noise_steps(const ModelComponents& m, const ImageRequest& r,
                        const std::vector<float>& sigmas) {
    if (!m.high_noise_diffusion) return 0;
    const size_t steps = sigmas.size() - 1;
    if (r.high_noise.steps >= 0) return std::min(static_cast<size_t>(r.high_noise.steps), steps);
    for (size_t i = 0; i < sigmas.size(); ++i)
        if (sigmas[i] < r.high_noise.boundary) return i;
    return 0;
}

// img2img starts part-way: the last t_enc + 1 sigmas, as the reference cuts them.
std::vector<float> img2img_sigmas(const std::vector<float>& sigmas, float strength) {
    const size_t steps = sigmas.size() - 1;
    size_t t_enc = static_cast<size_t>(static_cast<float>(steps) * strength);
    if (t_enc == steps) t_enc--;
    return std::vector<float>(sigmas.begin() + static_cast<std::ptrdiff_t>(steps - t_enc - 1),
                              sigmas.end());
}

// 3x3 max filter: an inpaint model's denoise mask reaches one latent pixel past the mask.
Tensor dilate(const Tensor& mask) {
    const int64_t h = mask.size(2), w = mask.size(3);
    Tensor out = Tensor::empty(mask.shape());
    const float* p = mask.data<float>();
    float* o = out.data<float>();
    for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
            float v = 0;
            for (int64_t dy = -1; dy <= 1; ++dy) {
                for (int64_t dx = -1; dx <= 1; ++dx) {
                    int64_t yy = y + dy, xx = x + dx;
                    if (yy >= 0 && yy < h && xx >= 0 && xx < w) v = std::max(v, p[yy * w + xx]);
                }
            }
            o[y * w + x] = v;
        }
    }
    return out;
}

}  // namespace

void check_video_request(const ModelComponents& m, const ImageRequest& r) {
    if (r.frames == 0) return;
    SD_CHECK(m.video,
             "%s is an image model: video generation (vid_gen) needs a video model such as Wan",
             m.family_name.c_str());
    SD_CHECK(!r.init_image || m.video_init != VideoInit::None || m.control_video,
             "%s makes videos from text only: an init image (-i) needs an image-to-video model "
             "(Wan I2V, FLF2V or Wan2.2 TI2V-5B) or a VACE model (its reference image)",
             m.family_name.c_str());
    SD_CHECK(!r.end_image || m.video_init == VideoInit::Condition,
             "%s takes no end image (--end-img): a video's last frame conditions Wan I2V and "
             "FLF2V models",
             m.family_name.c_str());
    SD_CHECK(!r.mask_image && !r.control_image && r.ref_images.empty(),
             "a video from a mask, control image or reference images is not supported by this "
             "build yet");
    SD_CHECK(!r.hires.enabled, "the hires fix is for images, not videos");
    SD_CHECK(r.batch_count == 1, "a video request makes one video (batch count %d)", r.batch_count);
}

// Qwen-Image-Layered decomposes: text (and a reference image) to layers + 1 RGBA images.
void check_layers_request(const ModelComponents& m, const ImageRequest& r) {
    if (!m.rgba_layers) return;
    constexpr int kMaxLayers = 64;  // the paper's are 2 to 10; each adds the image's tokens
    SD_CHECK(r.layers >= 0 && r.layers <= kMaxLayers,
             "qwen_image_layers (--qwen-image-layers) %d: %s makes 0 to %d layers (and the "
             "composite)",
             r.layers, m.family_name.c_str(), kMaxLayers);
    SD_CHECK(!r.init_image,
             "%s decomposes a reference image (--ref-image) into layers; an init image (img2img, "
             "-i) is not supported",
             m.family_name.c_str());
    SD_CHECK(!r.hires.enabled, "the hires fix does not work with %s's layers",
             m.family_name.c_str());
}

// The allocator's cache (see CachingAllocator, CacheBudget) sized to each phase. Streaming:
// 256 MiB while sampling, where the diffusion model's activations churn (a step then stays
// within ~5% of the default mode's), 64 MiB for the decode, whose activations of 100s of MiB
// would otherwise stay cached past the low-memory budget. Default mode: 512 MiB while
// sampling (the weights are resident then), 1 GiB for the decode, which has the memory to
// itself and would otherwise map and fill a fresh block for most of its large activations.
size_t cache_bytes_for(const ModelComponents& m, bool decoding) {
    const bool streamed = m.memory.residency == Residency::Streamed;
    const size_t mib = decoding ? (streamed ? 64 : 1024) : (streamed ? 256 : 512);
    return mib << 20;
}

size_t sampling_cache_bytes(const ModelComponents& m, const ImageRequest& r) {
    const size_t base = cache_bytes_for(m, /*decoding=*/false);
    if (m.memory.residency == Residency::Streamed) return base;
    const MemoryInputs in = memory_inputs(m, r);
    const double pixels = static_cast<double>(in.width) * static_cast<double>(in.height);
    const double call = in.footprint.diffusion_per_pixel * (pixels + in.ref_pixels);
    return std::max(base, static_cast<size_t>(call));
}

namespace {

struct Conditions {
    Conditioning cond, uncond;  // uncond.context undefined: no guidance
    Tensor control_hint;        // the control model's encoded hint (undefined: no control)
    Tensor concat;              // the model's extra input channels (pipeline/extra_input.h)
    Tensor init_latent;         // zeros for txt2img
    Tensor denoise_mask;        // where the sampler may change the latent (undefined: everywhere)
    bool first_frame_kept = false;  // a video's first latent frame is the init image's
    int64_t reference_frames = 0;   // latent frames before the video's, dropped before decoding
    std::vector<float> sigmas;
    size_t high_noise_steps = 0;  // the first steps of sigmas, a two-expert model's (Wan2.2)
};

// The control image as RGB in [0, 1] fitted to width x height, encoded by the control model.
Tensor encode_control_hint(const ModelComponents& m, const ImageRequest& r, int width, int height) {
    if (!r.control_image || m.extra_input == ExtraInput::ControlLatent) return {};
    if (!m.control) {
        SD_LOG_WARN("a control image was given but no ControlNet is loaded: it is not used");
        return {};
    }
    const image::Image fitted =
        image::fit(*r.control_image, static_cast<uint32_t>(width), static_cast<uint32_t>(height));
    return m.control->encode_hint(rgb_image_to_tensor(fitted));
}

// The VAE's weights and the encoders' scratch (text encoders' too) leave before sampling.
// The sampler's first step then maps its activations from the pages just given back, which
// cost far less to fault in than pages the process never had (under virtualisation ~3 ms a
// fresh MiB on our CI machine), where a kept cache of the encoders' sizes would go unused.
void release_encoder(const ModelComponents& m) {
    if (!m.memory.keep_vae) m.codec->release_weights();
    CachingAllocator::instance().trim();  // the encoders' scratch is not the sampler's
}

// The request's reference images as latents on both sides of guidance (the reference gives
// every diffusion call the same references).
void attach_ref_latents(const ModelComponents& m, const ImageRequest& r, Rng& rng, Conditions& c) {
    if (r.ref_images.empty()) return;
    const RefImageParams p = parse_ref_image_args(r.ref_image_args, m.ref_images.preset);
    const std::vector<Tensor> latents =
        encode_ref_latents(m, r.ref_images, p, r.width, r.height, rng);
    for (Conditioning* side : {&c.cond, &c.uncond}) {
        side->ref_latents = latents;
        side->ref_index = p.index_mode;
    }
}

// The reference images a vision-language text encoder reads with the prompt (pass_to_vlm of
// --ref-image-args, on by default where the family's encoder reads images).
std::vector<image::Image> vlm_images(const ModelComponents& m, const ImageRequest& r) {
    if (r.ref_images.empty() || !m.ref_images.vlm) return {};
    if (!parse_ref_image_args(r.ref_image_args, m.ref_images.preset).pass_to_vlm) return {};
    return r.ref_images;
}

// With an init image: the denoise mask and an inpaint model's extra input (the masked
// picture's latent with the mask, pipeline/extra_input.h).
void attach_inpaint(const ModelComponents& m, const ImageRequest& r, const Tensor& image, Rng& rng,
                    Conditions& c) {
    const LatentFormat& f = m.latent;
    const Tensor mask = r.mask_image ? mask_to_tensor(*r.mask_image)
                                     : Tensor::full({1, 1, r.height, r.width}, 1.0f);
    const Tensor small_mask = latent_mask(mask, f.factor);
    if (m.extra_input != ExtraInput::MaskAndMaskedLatent &&
        m.extra_input != ExtraInput::MaskedLatentAndPixelMask) {
        if (r.mask_image) c.denoise_mask = small_mask;
        return;
    }
    ExtraInputParts parts;
    parts.mask = mask;
    parts.latent_mask = small_mask;
    parts.masked_latent = to_model_latent(f, m.codec->encode(masked_image(image, mask), rng));
    c.concat = assemble_extra_input(m.extra_input, parts, f.factor);
    if (r.mask_image) c.denoise_mask = dilate(small_mask);
}

// Wan2.2 TI2V: the init image's latent is the first latent frame, which the denoise mask
// keeps (the reference's denoise_mask) and the model sees at timestep 0.
void keep_first_frame(const ModelComponents& m, const ImageRequest& r, Rng& rng, Conditions& c) {
    const LatentFormat& f = m.latent;
    const int64_t T = c.init_latent.size(2), lh = c.init_latent.size(3), lw = c.init_latent.size(4);
    const Tensor first =
        to_model_latent(f, m.codec->encode(rgb_image_to_tensor(*r.init_image), rng));
    const Tensor frame = first.view({1, f.channels, 1, lh, lw});
    const Shape rest = {1, f.channels, T - 1, lh, lw};
    c.init_latent = T == 1 ? frame : concat({frame, Tensor::zeros(rest)}, 2);
    const Tensor keep = Tensor::zeros(frame.shape());
    c.denoise_mask = T == 1 ? keep : concat({keep, Tensor::full(rest, 1.0f)}, 2);
    c.first_frame_kept = true;
}

// The frames [1, 3, 1, H, W] of a mid-grey clip, for images to be put in.
std::vector<Tensor> grey_frames(int frames, int width, int height) {
    return std::vector<Tensor>(static_cast<size_t>(frames),
                               Tensor::full({1, 3, 1, height, width}, 0.5f));
}

// A clip [1, 3, F, H, W] of `frames` frames: the given ones first, grey after them.
Tensor clip_of(const std::vector<image::Image>& given, int frames, int width, int height) {
    std::vector<Tensor> clip = grey_frames(frames, width, height);
    for (size_t i = 0; i < std::min(clip.size(), given.size()); ++i)
        clip[i] = rgb_image_to_tensor(given[i]).unsqueeze(2);
    return concat(clip, 2);
}

// Wan image-to-video: a grey clip holding the init image first and the end image last,
// encoded, after the frame mask; the image encoder's states of both on both sides of guidance.
void condition_on_frames(const ModelComponents& m, const ImageRequest& r, Rng& rng, Conditions& c) {
    std::vector<Tensor> frames = grey_frames(r.frames, r.width, r.height);
    if (r.init_image) frames.front() = rgb_image_to_tensor(*r.init_image).unsqueeze(2);
    if (r.end_image) frames.back() = rgb_image_to_tensor(*r.end_image).unsqueeze(2);
    ExtraInputParts parts;
    parts.clip_latent = to_model_latent(m.latent, m.codec->encode(concat(frames, 2), rng));
    const Shape& shape = c.init_latent.shape();
    parts.frame_mask = video_frame_mask(shape[2], shape[3], shape[4], r.init_image.has_value(),
                                        r.end_image.has_value());
    c.concat = assemble_extra_input(m.extra_input, parts, m.latent.factor);
    if (!m.image_encoder) return;  // Wan2.2 I2V reads the frames' latents alone
    const Tensor states = m.image_encoder->encode(r.init_image, r.end_image);
    c.cond.image_states = states;
    c.uncond.image_states = states;
    m.image_encoder->release_weights();
}

// Wan VACE's control context [1, 96, T, h, w], as the reference's generate_video builds it:
// the latents of the inactive part (a grey clip: the mask is all ones) and of the reactive
// part (the control clip), then the mask as 64 channels (the 8x8 pixels of a latent pixel:
// ones). An init image is a reference frame before them (its latent, then zeros), which the
// latent carries while sampling and drops before the decode.
void attach_control_video(const ModelComponents& m, const ImageRequest& r, Rng& rng,
                          Conditions& c) {
    SD_CHECK(m.codec->has_encoder(),
             "%s encodes the control video with its VAE, whose encoder was not loaded",
             m.family_name.c_str());
    const LatentFormat& f = m.latent;
    const Tensor inactive =
        to_model_latent(f, m.codec->encode(clip_of({}, r.frames, r.width, r.height), rng));
    const Tensor reactive = to_model_latent(
        f, m.codec->encode(clip_of(r.control_frames, r.frames, r.width, r.height), rng));
    const Shape& s = inactive.shape();  // [1, C, T, h, w]
    const int64_t mask_channels = f.factor * f.factor;
    Tensor context =
        concat({inactive, reactive, Tensor::full({1, mask_channels, s[2], s[3], s[4]}, 1.0f)}, 1);
    if (r.init_image) {
        const Tensor ref = to_model_latent(
            f, m.codec->encode(rgb_image_to_tensor(*r.init_image).unsqueeze(2), rng));
        const Tensor rest = Tensor::zeros({1, context.size(1) - s[1], 1, s[3], s[4]});
        context = concat({concat({ref, rest}, 1), context}, 2);
        c.reference_frames = 1;
        c.init_latent = Tensor::zeros({1, s[1], s[2] + 1, s[3], s[4]});
    }
    for (Conditioning* side : {&c.cond, &c.uncond}) {
        side->control_video = context;
        side->control_video_strength = r.control_video_strength;
    }
}

// A video's starting latent [1, C, T, h, w]: zeros, and what the model makes of the given
// frames (ModelComponents::video_init, control_video).
void attach_video_latent(const ModelComponents& m, const ImageRequest& r, Rng& rng, Conditions& c) {
    const LatentFormat& f = m.latent;
    const int64_t T = latent_frames(r.frames), lh = r.height / f.factor, lw = r.width / f.factor;
    c.init_latent = Tensor::zeros({1, f.channels, T, lh, lw});
    if (m.control_video) return attach_control_video(m, r, rng, c);
    const bool frames_given = r.init_image || r.end_image;
    if (m.video_init == VideoInit::None || (!frames_given && m.video_init != VideoInit::Condition))
        return;
    SD_CHECK(m.codec->has_encoder(),
             "%s encodes the video's given frames with its VAE, whose encoder was not loaded",
             m.family_name.c_str());
    if (m.video_init == VideoInit::KeepFirstFrame)
        keep_first_frame(m, r, rng, c);
    else
        condition_on_frames(m, r, rng, c);
}

Conditions prepare(const ModelComponents& m, const Denoiser& d, const ImageRequest& r) {
    const double start = now_seconds();
    Conditions c;
    c.control_hint = encode_control_hint(m, r, r.width, r.height);
    ConditionRequest text{r.prompt, r.clip_skip, r.width, r.height, false, vlm_images(m, r)};
    c.cond = m.conditioner->encode(text);
    cancellation_point();
    c.cond.guidance = r.guidance;
    c.sigmas = sigma_schedule(m, d, r);
    c.high_noise_steps = high_noise_steps(m, r, c.sigmas);
    if (r.cfg_scale != 1.0f || (c.high_noise_steps > 0 && r.high_noise.cfg_scale != 1.0f)) {
        text.prompt = r.negative_prompt;
        text.negative = true;
        c.uncond = m.conditioner->encode(text);
        c.uncond.guidance = r.guidance;
    }
    if (!m.memory.keep_text_encoder) m.conditioner->release_weights();
    SD_LOG_INFO("prompt encoded in %.2f s", now_seconds() - start);
    const LatentFormat& f = m.latent;
    const int64_t lh = r.height / f.factor, lw = r.width / f.factor;
    // The reference seeds its generator with the request's seed before encoding; the init
    // image draws first, then the references, then an inpaint model's masked image.
    ImageRngs rngs(r.rng, r.sampler_rng, static_cast<uint64_t>(r.seed));
    Tensor image;
    if (r.frames > 0) {
        attach_video_latent(m, r, rngs.noise(), c);
    } else if (r.init_image) {
        SD_CHECK(m.codec->has_encoder(), "img2img needs the VAE encoder, which was not loaded");
        if (r.strength < 1.0f) c.sigmas = img2img_sigmas(c.sigmas, r.strength);
        image = rgb_image_to_tensor(*r.init_image);
        c.init_latent = to_model_latent(f, m.codec->encode(image, rngs.noise()));
    }
    attach_ref_latents(m, r, rngs.noise(), c);
    if (r.init_image && r.frames == 0) {
        attach_inpaint(m, r, image, rngs.noise(), c);
    } else if (r.frames == 0 && m.rgba_layers) {
        c.init_latent = Tensor::zeros({1, f.channels, r.layers + 1, lh, lw});
    } else if (r.frames == 0) {
        c.init_latent = Tensor::zeros({1, f.channels, lh, lw});
        if (m.extra_input == ExtraInput::MaskAndMaskedLatent) {
            // No picture to keep: the whole mask is set and the masked image is zero.
            c.concat = concat(
                {Tensor::full({1, 1, lh, lw}, 1.0f), Tensor::zeros({1, f.channels, lh, lw})}, 1);
        }
    }
    if (m.extra_input == ExtraInput::ControlLatent) {
        ExtraInputParts parts;
        parts.control_latent = to_model_latent(
            f, m.codec->encode(rgb_image_to_tensor(*r.control_image), rngs.noise()));
        c.concat = assemble_extra_input(m.extra_input, parts, f.factor);
    }
    release_encoder(m);
    return c;
}

// A denoised value with the init latent kept outside the denoise mask.
Tensor keep_unmasked(const Conditions& c, Tensor d) {
    if (!c.denoise_mask.defined()) return d;
    Tensor keep = add_scalar(c.denoise_mask * -1.0f, 1.0f);
    return c.init_latent * keep + d * c.denoise_mask;
}

// A call the step cache forecasts (spectrum): no network runs.
Denoised forecast(const Conditions& c, const Tensor& x, const DenoiseCall& call,
                  const LatentTap& tap, StepCache& cache) {
    Denoised result;
    result.pred = keep_unmasked(c, cache.forecast(x.shape()));
    if (call.need_uncond) result.pred_uncond = result.pred;
    if (tap.wants(call.step, /*is_noisy=*/false)) tap.fn(call.step, result.pred, false);
    cache.end_call(result.pred);
    return result;
}

// The x0 prediction for one evaluation: guidance on the raw model outputs, then the
// denoiser's scalings; a denoise mask keeps the init latent outside it. The step cache may
// answer for a side of guidance (keyed by that side's conditioning) or for the whole call.
// `net` is the diffusion model of the sampling stage (a two-expert model has two).
Denoised denoise(const ModelComponents& m, const DiffusionModel& net, const Denoiser& d,
                 const ImageRequest& r, const Conditions& c, const Tensor& x,
                 const DenoiseCall& call, const LatentTap& tap, StepCache& cache) {
    cache.begin_call(call.step, call.sigma);
    if (cache.should_forecast()) return forecast(c, x, call, tap, cache);
    const Scalings s = d.scalings(call.sigma);
    Tensor t = Tensor::full({1}, d.sigma_to_t(call.sigma));
    Tensor input = x * s.c_in;
    if (c.first_frame_kept) {
        // The model sees the kept frame as it is, at timestep 0 (the reference's
        // process_timesteps for Wan2.2 TI2V).
        input = keep_unmasked(c, input);
        std::vector<float> per_frame(static_cast<size_t>(x.size(2)), d.sigma_to_t(call.sigma));
        per_frame[0] = 0.0f;
        t = Tensor::from_vector({x.size(2)}, per_frame);
    }
    if (tap.wants(call.step, /*is_noisy=*/true)) tap.fn(call.step, input, true);
    const Tensor model_input = c.concat.defined() ? concat({input, c.concat}, 1) : input;
    // A control model runs for each side of guidance with that side's conditioning.
    auto network = [&](const Conditioning& cond) {
        if (!c.control_hint.defined()) return net.forward(model_input, t, cond);
        const ControlSignal control{m.control->forward(input, t, cond, c.control_hint),
                                    r.control_strength};
        return net.forward(model_input, t, cond, &control);
    };
    auto run = [&](const Conditioning& cond, const Conditioning& key) {
        Tensor out;
        if (cache.before_condition(&key, input, &out)) return out;
        out = network(cond);
        cache.after_condition(&key, input, out);
        return out;
    };
    Tensor out_cond = run(c.cond, c.cond);
    Tensor out = out_cond, out_uncond;
    if (c.uncond.context.defined() && r.cfg_scale != 1.0f) {
        cancellation_point();  // between the two passes of guidance
        out_uncond = run(c.uncond, c.uncond);
        out = classifier_free_guidance(out_cond, out_uncond, r.cfg_scale);
    }
    const int sigma_count = static_cast<int>(c.sigmas.size());
    if (r.slg.active() && call.step > static_cast<int>(r.slg.start * sigma_count) &&
        call.step < static_cast<int>(r.slg.end * sigma_count) && !cache.step_skipped()) {
        cancellation_point();
        Conditioning skipped = c.cond;
        skipped.skip_layers = r.slg.layers;
        // The reference keys this pass as the positive side too.
        out = skip_layer_guidance(out, out_cond, run(skipped, c.cond), r.slg.scale);
    }
    auto to_x0 = [&](const Tensor& o) { return o * s.c_out + x * s.c_skip; };
    Denoised result;
    const Tensor raw = to_x0(out);
    result.pred = keep_unmasked(c, raw);
    if (call.need_uncond)
        result.pred_uncond = keep_unmasked(c, to_x0(out_uncond.defined() ? out_uncond : out_cond));
    if (tap.wants(call.step, /*is_noisy=*/false)) tap.fn(call.step, result.pred, false);
    cache.end_call(raw);  // spectrum's history takes it before the mask, as the reference
    return result;
}

// One sampling run of a generation: the network, the request whose sampler and guidance it
// uses, the conditions with its part of the schedule, whose first step is step first_step + 1
// of total_steps (a two-expert model samples in two stages, the hires fix in a second run).
struct Stage {
    const DiffusionModel& net;
    const ImageRequest& r;
    Conditions c;
    int first_step, total_steps;
};

Tensor sample_stage(const ModelComponents& m, const Denoiser& d, const Stage& s, Tensor x, Rng& rng,
                    const GenerationHooks& hooks, double start) {
    SamplerOptions options;
    options.eta = s.r.eta;
    options.is_flow = d.is_flow();
    options.on_step = [&](const StepInfo& info) {
        if (hooks.progress)
            hooks.progress(s.first_step + info.step, s.total_steps,
                           static_cast<float>(now_seconds() - start));
        return !(hooks.cancel && hooks.cancel->cancelled());
    };
    StepCache step_cache(s.r.cache, d.schedule(), s.c.sigmas);
    DenoiseFn fn = [&](const Tensor& xt, const DenoiseCall& call) {
        return denoise(m, s.net, d, s.r, s.c, xt, call, hooks.preview, step_cache);
    };
    x = sample(s.r.method, fn, std::move(x), s.c.sigmas, rng, options);
    step_cache.log_summary();
    return x;
}

// The request as a two-expert model's high-noise stage samples: its sampler and guidance.
ImageRequest high_noise_request(const ImageRequest& r) {
    ImageRequest h = r;
    h.method = r.high_noise.method;
    h.cfg_scale = r.high_noise.cfg_scale;
    h.eta = r.high_noise.eta;
    return h;
}

// The sampled latent of one seed: the high-noise expert's steps first where the model has
// one, then the model's own from where they stopped (no noise added between, as the
// reference).
Tensor sample_latent(const ModelComponents& m, const Denoiser& d, const ImageRequest& r,
                     const Conditions& c, Tensor x, Rng& rng, const GenerationHooks& hooks,
                     double start) {
    const size_t split = c.high_noise_steps;
    const int total = static_cast<int>(c.sigmas.size()) - 1;
    auto part = [&](size_t from, size_t to) {
        Conditions stage = c;
        stage.sigmas.assign(c.sigmas.begin() + static_cast<std::ptrdiff_t>(from),
                            c.sigmas.begin() + static_cast<std::ptrdiff_t>(to) + 1);
        return stage;
    };
    if (split > 0) {
        const ImageRequest high = high_noise_request(r);
        x = sample_stage(m, d, {*m.high_noise_diffusion, high, part(0, split), 0, total},
                         std::move(x), rng, hooks, start);
        m.high_noise_diffusion->release_weights();  // the low-noise expert's pages take its place
        SD_LOG_INFO("high-noise expert: %zu of %d steps in %.2f s", split, total,
                    now_seconds() - start);
    }
    if (static_cast<int>(split) == total) return x;
    return sample_stage(
        m, d,
        {*m.diffusion, r, part(split, static_cast<size_t>(total)), static_cast<int>(split), total},
        std::move(x), rng, hooks, start);
}

// The codec latent's images: one (an image), its frames (a video), or each frame decoded alone
// to an image of its own (Qwen-Image-Layered's layers, as the reference decodes them).
std::vector<image::Image> decode_images(const ModelComponents& m, const ImageRequest& r,
                                        const Tensor& z) {
    const VaeTiling tiling =
        decode_tiling(m, r.vae_tiling, z.size(z.dim() - 2), z.size(z.dim() - 1));
    if (!m.rgba_layers) return decoded_frames(m.codec->decode(z, tiling), r.frames > 0);
    std::vector<image::Image> images;
    const int64_t C = z.size(1), T = z.size(2), h = z.size(3), w = z.size(4);
    for (int64_t t = 0; t < T; ++t) {
        cancellation_point();
        const Tensor frame = z.narrow(2, t, 1).contiguous().view({1, C, h, w});
        images.push_back(decoded_to_image(m.codec->decode(frame, tiling)));
    }
    return images;
}

// The image (or the video's frames) of one seed.
std::vector<image::Image> generate_one(const ModelComponents& m, const Denoiser& d,
                                       const ImageRequest& r, const Conditions& c, int64_t seed,
                                       const GenerationHooks& hooks, CacheBudget& cache) {
    ImageRngs rngs(r.rng, r.sampler_rng, static_cast<uint64_t>(seed));
    Tensor noise = randn_tensor(rngs.noise(), c.init_latent.shape());
    Tensor x = d.noise_scaling(c.sigmas.front(), noise, c.init_latent);
    const double start = now_seconds();
    cache.set(sampling_cache_bytes(m, r));
    x = sample_latent(m, d, r, c, std::move(x), rngs.sampler(), hooks, start);
    x = d.inverse_noise_scaling(c.sigmas.back(), x);
    SD_LOG_INFO("sampling done in %.2f s", now_seconds() - start);
    if (r.hires.enabled) {  // no mask here (check_request): the whole latent is repainted
        Conditions hires_c = c;
        hires_c.denoise_mask = Tensor();
        // The control image steers the second pass too, fitted to its size.
        if (c.control_hint.defined())
            hires_c.control_hint =
                encode_control_hint(m, r, r.hires.target_width, r.hires.target_height);
        auto hires_sample = [&](const Tensor& xt, const std::vector<float>& s, Rng& g) {
            Conditions stage = hires_c;
            stage.sigmas = s;
            const int steps = static_cast<int>(s.size()) - 1;
            return sample_stage(m, d, {*m.diffusion, r, std::move(stage), 0, steps}, xt, g, hooks,
                                start);
        };
        x = hires_pass(m, d, r.hires, r.scheduler, r.steps, r.rng, r.sampler_rng, seed, x,
                       r.vae_tiling, hires_sample);
    }
    if (c.reference_frames > 0)  // VACE's reference frame leaves the video
        x = x.narrow(2, c.reference_frames, x.size(2) - c.reference_frames).contiguous();
    Tensor z = to_codec_latent(m.latent, x);
    cancellation_point();
    m.diffusion->release_weights();  // the decode's activations take their place
    if (m.control) m.control->release_weights();
    cache.set(cache_bytes_for(m, /*decoding=*/true));
    CachingAllocator::instance().trim();
    const double decode_start = now_seconds();
    std::vector<image::Image> images = decode_images(m, r, z);
    if (!m.memory.keep_vae) m.codec->release_weights();
    CachingAllocator::instance().trim();
    SD_LOG_INFO("latent decoded in %.2f s", now_seconds() - decode_start);
    return images;
}

// The denoiser of one generation: the model's own, or for a flow model asked for another
// shift (--flow-shift) one of its own, so that the context's stays as it was and two runs
// with different shifts can share the model.
class RunDenoiser {
  public:
    RunDenoiser(const ModelComponents& m, float flow_shift) : model_(*m.denoiser) {
        if (!std::isfinite(flow_shift)) return;
        if (!model_.is_flow()) {
            SD_LOG_WARN("flow_shift %g ignored: the %s model is not a flow model", flow_shift,
                        m.family_name.c_str());
            return;
        }
        own_ = make_denoiser(model_.prediction(), flow_shift);
        SD_LOG_INFO("flow shift %g for this generation", flow_shift);
    }
    const Denoiser& get() const { return own_ ? *own_ : model_; }

  private:
    const Denoiser& model_;
    std::unique_ptr<Denoiser> own_;
};

// However a generation ends (done, cancelled, failed), the networks' pages and the
// activations' cache leave RSS, as after a finished image.
struct IdleAfterGeneration {
    const ModelComponents& m;
    ~IdleAfterGeneration() {
        m.diffusion->release_weights();
        if (m.high_noise_diffusion) m.high_noise_diffusion->release_weights();
        if (m.control) m.control->release_weights();
        if (!m.memory.keep_text_encoder) m.conditioner->release_weights();
        if (!m.memory.keep_vae) m.codec->release_weights();
        CachingAllocator::instance().trim();
    }
};

}  // namespace

ImageRequest settle_request(const ModelComponents& m, const ImageRequest& request) {
    ImageRequest r = request;
    check_request(r);
    check_prompt_length(m, r.prompt, r.max_prompt_tokens, "prompt");
    if (r.cfg_scale != 1.0f)
        check_prompt_length(m, r.negative_prompt, r.max_prompt_tokens, "negative prompt");
    // The size was settled by the request's resolver (api/image_request.cpp, the one place
    // a size is aligned); a request that skipped it is a caller's bug, refused by name.
    const int64_t multiple = size_multiple(m);
    SD_CHECK(r.width > 0 && r.height > 0 && r.width % multiple == 0 && r.height % multiple == 0,
             "a %dx%d request is not settled: %s sizes are multiples of %lld (align them first, "
             "pipeline/image_size.h)",
             r.width, r.height, m.family_name.c_str(), (long long)multiple);
    check_video_request(m, r);
    check_layers_request(m, r);
    check_ref_images(m, r);
    check_step_cache(r.cache, m.diffusion->cache_target(), m.family_name);
    const std::string what =
        "a " + std::to_string(r.width) + "x" + std::to_string(r.height) +
        (r.frames > 0 ? " video of " + std::to_string(r.frames) + " frames" : " image") +
        (r.hires.enabled ? " (with its hires pass)" : "");
    const MemoryInputs in = memory_inputs(m, r);
    check_generation_memory(estimate_generation_memory(in), available_memory_bytes(), in, what);
    fit_to_request(r.init_image, r, "init image");
    fit_to_request(r.end_image, r, "end image");
    fit_to_request(r.mask_image, r, "mask image");
    fit_to_request(r.control_image, r, "control image");
    check_hires(m, r);
    check_extra_input(m, r);
    return r;
}

std::vector<image::Image> generate_images(const ModelComponents& m, const ImageRequest& request,
                                          const GenerationHooks& hooks) {
    const ImageRequest r = settle_request(m, request);
    // runscope: compute type, threads, cache budget, kernel scratch and cancel token of this
    // run (pipeline/run_scope.h); `idle` releases the weights before it ends.
    RunScope run(run_options(m.memory, cache_bytes_for(m, /*decoding=*/false), hooks.cancel));
    CacheBudget& cache = run.cache();
    const IdleAfterGeneration idle{m};
    const RunDenoiser denoiser(m, r.flow_shift);
    Conditions c = prepare(m, denoiser.get(), r);
    std::vector<image::Image> images;
    for (int b = 0; b < r.batch_count; ++b) {
        cancellation_point();
        if (b > 0 && hooks.stop_after_image && hooks.stop_after_image->load()) break;
        const int64_t seed = batch_image_seed(r.seed, b);
        SD_LOG_INFO("generating image %d/%d, seed %lld", b + 1, r.batch_count,
                    static_cast<long long>(seed));
        const double t0 = now_seconds();
        for (image::Image& image : generate_one(m, denoiser.get(), r, c, seed, hooks, cache))
            images.push_back(std::move(image));
        SD_LOG_INFO("image %d done in %.2f s", b + 1, now_seconds() - t0);
    }
    return images;
}

}  // namespace sd
