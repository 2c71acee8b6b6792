#include "api/image_request.h"

#include <cmath>
#include <string>

#include "api/c_enum.h"
#include "api/c_images.h"
#include "api/c_message.h"
#include "api/cache_request.h"
#include "base/error.h"
#include "base/log.h"
#include "image/image_resize.h"
#include "pipeline/generate.h"
#include "pipeline/image_size.h"
#include "pipeline/prompt_length.h"
#include "sampling/rng.h"
#include "stable-diffusion-ext.h"

static_assert(sd::kMaxPromptBytesPerToken == SD_MAX_PROMPT_BYTES_PER_TOKEN);

namespace sd::api {
namespace {

bool has(const char* s) {
    return s != nullptr && s[0] != '\0';
}

bool has_custom_sigmas(const sd_sample_params_t& s) {
    return s.custom_sigmas && s.custom_sigmas_count > 0;
}

void write_back_sampling(const SettledSampling& settled, sd_sample_params_t& s) {
    s.sample_method = settled.method;
    if (!has_custom_sigmas(s)) s.scheduler = settled.scheduler;  // custom sigmas replace it
    s.sample_steps = settled.steps;
    s.flow_shift = settled.flow_shift;
}

HiresRequest to_hires(const sd_hires_params_t& p, int width, int height, const ModelComponents& m) {
    HiresRequest h;
    h.enabled = true;
    h.upscaler = p.upscaler;
    h.model_path = has(p.model_path) ? p.model_path : "";
    h.target_width = p.target_width;
    h.target_height = p.target_height;
    h.steps = p.steps;
    h.denoising_strength = p.denoising_strength;
    h.upscale_tile_size = p.upscale_tile_size;
    if (p.custom_sigmas && p.custom_sigmas_count >= 2)
        h.custom_sigmas.assign(p.custom_sigmas, p.custom_sigmas + p.custom_sigmas_count);
    const sd_hires_upscaler_t upscaler =
        c_enum(p.upscaler, SD_HIRES_UPSCALER_COUNT, "hires upscaler");
    SD_CHECK(upscaler != SD_HIRES_UPSCALER_MODEL || !h.model_path.empty(),
             "hires upscaler Model needs a model file (hires model_path)");
    resolve_hires_target(h, width, height, p.scale, size_multiple(m));
    return h;
}

VaeTiling to_vae_tiling(const sd_tiling_params_t& p) {
    VaeTiling t;
    t.enabled = p.enabled;
    if (p.tile_size_x > 0) t.tile_size = p.tile_size_x;
    if (p.target_overlap > 0) t.overlap = p.target_overlap;
    return t;
}

// A two-expert video model's high-noise stage from high_noise_sample_params and
// moe_boundary; the scheduler is the request's (one schedule for both stages).
ImageRequest::HighNoiseStage to_high_noise_stage(const LoadedModel& model,
                                                 const sd_vid_gen_params_t& p) {
    const sd_sample_params_t& s = p.high_noise_sample_params;
    ImageRequest::HighNoiseStage h;
    h.method = c_enum_or_unset(s.sample_method, SAMPLE_METHOD_COUNT, "high-noise sampling method");
    if (h.method == SAMPLE_METHOD_COUNT) h.method = default_sample_method(&model);
    h.steps = s.sample_steps;
    h.cfg_scale = s.guidance.txt_cfg;
    SD_CHECK(std::isfinite(h.cfg_scale), "--high-noise-cfg-scale must be a number");
    h.eta = s.eta;
    h.boundary = p.moe_boundary;
    SD_CHECK(std::isfinite(h.boundary), "--moe-boundary must be a number");
    const sd_slg_params_t& slg = s.guidance.slg;
    SD_CHECK(slg.scale == 0.0f || slg.layer_count == 0,
             "--high-noise-slg-scale %g: skip-layer guidance needs a model whose blocks can be "
             "skipped (SD3); %s has none",
             slg.scale, model.components.family_name.c_str());
    return h;
}

}  // namespace

SampleMethod default_sample_method(const LoadedModel* model) {
    if (model && model->family) return model->family->defaults.method;
    return EULER_A_SAMPLE_METHOD;
}

Scheduler default_scheduler(const LoadedModel* model, SampleMethod method) {
    const Denoiser* denoiser = model ? model->components.denoiser.get() : nullptr;
    if (denoiser && denoiser->prediction() == EDM_V_PRED) return EXPONENTIAL_SCHEDULER;
    if (method == LCM_SAMPLE_METHOD || method == TCD_SAMPLE_METHOD) return LCM_SCHEDULER;
    if (method == DDIM_TRAILING_SAMPLE_METHOD) return SIMPLE_SCHEDULER;
    if (model && model->family) return model->family->defaults.scheduler;
    return DISCRETE_SCHEDULER;
}

int64_t settle_seed(int64_t seed) {
    return resolve_seed(seed);
}

void settle_size(const ModelComponents& m, int& width, int& height) {
    align_size_up(width, height, size_multiple(m), "generation request");
}

SettledSampling settle_sampling(const LoadedModel& model, const sd_sample_params_t& s) {
    SettledSampling out;
    out.method = c_enum_or_unset(s.sample_method, SAMPLE_METHOD_COUNT, "sampling method");
    if (out.method == SAMPLE_METHOD_COUNT) out.method = default_sample_method(&model);
    out.scheduler = c_enum_or_unset(s.scheduler, SCHEDULER_COUNT, "scheduler");
    if (out.scheduler == SCHEDULER_COUNT) out.scheduler = default_scheduler(&model, out.method);
    out.steps = s.sample_steps;
    if (has_custom_sigmas(s) && s.sample_steps != s.custom_sigmas_count - 1) {
        out.steps = s.custom_sigmas_count - 1;
        SD_LOG_WARN("sample_steps %d: the %d custom sigmas make %d steps", s.sample_steps,
                    s.custom_sigmas_count, out.steps);
    }
    if (std::isfinite(s.flow_shift)) {
        const ModelComponents& m = model.components;
        if (m.denoiser && m.denoiser->is_flow()) {
            out.flow_shift = s.flow_shift;
        } else {
            SD_LOG_WARN("flow_shift %g ignored: the %s model is not a flow model", s.flow_shift,
                        m.family_name.c_str());
        }
    }
    return out;
}

void reject_unbuilt(const sd_img_gen_params_t& p) {
    if (p.pm_params.id_images_count > 0) fail("PhotoMaker is not supported by this build yet");
    if (p.ip_adapter_image.data)
        fail("--ip-adapter-image needs IP-Adapter, which this build does not have yet");
    if (has(p.pulid_params.id_embedding_path))
        fail("PuLID (--pulid-id-embedding) is not supported by this build yet");
    if (p.circular_x || p.circular_y) fail("--circular padding is not supported yet");
    // Options that would otherwise be taken and not acted on: refused, naming them.
    const sd_sample_params_t& s = p.sample_params;
    if (s.shifted_timestep > 0)
        fail("--timestep-shift (SDXL timestep shifting) is not supported by this build yet");
    const float img_cfg = s.guidance.img_cfg;
    if (std::isfinite(img_cfg) && img_cfg != 1.0f && img_cfg != s.guidance.txt_cfg)
        fail("--img-cfg-scale %g: image guidance is not supported by this build yet", img_cfg);
    if (has(s.extra_sample_args)) fail("--extra-sample-args is not supported by this build yet");
    const sd_tiling_params_t& t = p.vae_tiling_params;
    if (t.rel_size_x > 0 || t.rel_size_y > 0)
        fail(
            "--vae-relative-tile-size is not supported by this build yet; give "
            "--vae-tile-size");
    if (t.tile_size_y > 0 && t.tile_size_x > 0 && t.tile_size_y != t.tile_size_x)
        fail("--vae-tile-size %dx%d: tiles are square in this build (give one size)", t.tile_size_x,
             t.tile_size_y);
    if (has(t.extra_tiling_args)) fail("--extra-tiling-args is not supported by this build yet");
}

namespace {

// What image and video parameters share: the prompts, the size, the sampling, the seed, the
// context's generators.
template <typename Params>
ImageRequest settle_shared(const RequestContext& ctx, const Params& p) {
    ImageRequest r;
    r.prompt = p.prompt ? p.prompt : "";
    r.max_prompt_tokens = ctx.max_prompt_tokens;
    r.negative_prompt = p.negative_prompt ? p.negative_prompt : "";
    r.clip_skip = p.clip_skip;
    r.width = p.width;
    r.height = p.height;
    // Before the hires target, which the reference derives from the aligned size.
    settle_size(ctx.model.components, r.width, r.height);
    const sd_sample_params_t& s = p.sample_params;
    const SettledSampling sampling = settle_sampling(ctx.model, s);
    r.method = sampling.method;
    r.scheduler = sampling.scheduler;
    r.steps = sampling.steps;
    r.flow_shift = sampling.flow_shift;
    r.cfg_scale = s.guidance.txt_cfg;
    r.guidance = s.guidance.distilled_guidance;
    r.eta = s.eta;
    if (has_custom_sigmas(s))
        r.custom_sigmas.assign(s.custom_sigmas, s.custom_sigmas + s.custom_sigmas_count);
    r.seed = settle_seed(p.seed);
    r.rng = ctx.rng;
    r.sampler_rng = ctx.sampler_rng;
    r.cache = to_step_cache(p.cache);
    return r;
}

}  // namespace

ImageRequest to_request(const RequestContext& ctx, const sd_img_gen_params_t& p) {
    reject_unbuilt(p);
    const ModelComponents& m = ctx.model.components;
    ImageRequest r = settle_shared(ctx, p);
    const sd_sample_params_t& s = p.sample_params;
    r.batch_count = p.batch_count;
    r.init_image = to_image8(p.init_image, "init image");
    r.mask_image = to_image8(p.mask_image, "mask image");
    r.strength = p.strength;
    r.control_image = to_image8(p.control_image, "control image");
    SD_CHECK(p.ref_images_count >= 0 && (p.ref_images || p.ref_images_count == 0),
             "ref_images: %d images but no array", p.ref_images_count);
    for (int i = 0; i < p.ref_images_count; ++i) {
        const std::string what = "reference image " + std::to_string(i + 1);
        auto image = to_image8(p.ref_images[i], what.c_str());
        SD_CHECK(image.has_value(), "%s has no pixels (data is NULL)", what.c_str());
        r.ref_images.push_back(std::move(*image));
    }
    r.ref_image_args = has(p.ref_image_args) ? p.ref_image_args : "";
    r.layers = p.qwen_image_layers;  // checked against the model by the pipeline
    r.control_strength = p.control_strength;
    r.vae_tiling = to_vae_tiling(p.vae_tiling_params);
    if (p.hires.enabled) r.hires = to_hires(p.hires, r.width, r.height, m);
    const sd_slg_params_t& slg = s.guidance.slg;
    if (slg.layers && slg.layer_count > 0)
        r.slg.layers.assign(slg.layers, slg.layers + slg.layer_count);
    r.slg.start = slg.layer_start;
    r.slg.end = slg.layer_end;
    r.slg.scale = slg.scale;
    SD_CHECK(!r.slg.active() || m.diffusion->can_skip_layers(),
             "skip-layer guidance (--slg-scale %g) needs a model whose blocks can be skipped "
             "(SD3); %s has none",
             r.slg.scale, m.family_name.c_str());
    return r;
}

void write_back(const ImageRequest& r, sd_img_gen_params_t& p) {
    p.seed = r.seed;
    p.width = r.width;
    p.height = r.height;
    write_back_sampling({r.method, r.scheduler, r.steps, r.flow_shift}, p.sample_params);
    if (r.hires.enabled) {
        p.hires.target_width = r.hires.target_width;
        p.hires.target_height = r.hires.target_height;
    }
}

namespace {

// A VACE model's control clip (--control-video), each frame fitted to the video's size, and
// its strength; another model ignores the frames, as the reference does, saying so.
void attach_control_frames(const ModelComponents& m, const sd_vid_gen_params_t& p,
                           ImageRequest& r) {
    SD_CHECK(p.control_frames_size >= 0 && (p.control_frames || p.control_frames_size == 0),
             "control_frames: %d frames but no array", p.control_frames_size);
    SD_CHECK(std::isfinite(p.vace_strength), "--vace-strength must be a number");
    r.control_video_strength = p.vace_strength;
    if (p.control_frames_size == 0) return;
    if (!m.control_video) {
        SD_LOG_WARN("--control-video: %s has no VACE blocks; its %d control frames are not used",
                    m.family_name.c_str(), p.control_frames_size);
        return;
    }
    for (int i = 0; i < p.control_frames_size; ++i) {
        const std::string what = "control frame " + std::to_string(i + 1);
        auto frame = to_image8(p.control_frames[i], what.c_str());
        SD_CHECK(frame.has_value(), "%s has no pixels (data is NULL)", what.c_str());
        r.control_frames.push_back(
            image::fit(*frame, static_cast<uint32_t>(r.width), static_cast<uint32_t>(r.height)));
    }
}

}  // namespace

ImageRequest to_video_request(const RequestContext& ctx, const sd_vid_gen_params_t& p) {
    const ModelComponents& m = ctx.model.components;
    SD_CHECK(m.video,
             "%s is an image model: video generation (vid_gen, generate_video) needs a video "
             "model such as Wan",
             m.family_name.c_str());
    // Inputs of the video variants this build does not run yet: refused, naming them.
    if (p.ref_images_count > 0 || p.ref_videos_count > 0 || p.ref_audios_count > 0)
        fail("reference images, videos or audio for a video are not supported yet");
    if (p.hires.enabled) fail("the hires fix is for images, not videos");
    if (p.circular_x || p.circular_y) fail("--circular padding is not supported yet");
    SD_CHECK(p.video_frames >= 1, "--video-frames %d: a video has at least one frame",
             p.video_frames);
    ImageRequest r = settle_shared(ctx, p);
    r.init_image = to_image8(p.init_image, "init image");
    r.end_image = to_image8(p.end_image, "end image");
    // The video VAEs' grid: 1 + 4k frames, as the reference aligns them (down).
    r.frames = (p.video_frames - 1) / 4 * 4 + 1;
    if (r.frames != p.video_frames)
        SD_LOG_WARN("--video-frames %d: a video has 1 + 4k frames; making %d", p.video_frames,
                    r.frames);
    check_video_request(m, r);  // the pipeline's checks, before any frame is prepared
    attach_control_frames(m, p, r);
    r.vae_tiling = to_vae_tiling(p.vae_tiling_params);
    if (p.vae_tiling_params.temporal_tiling)
        SD_LOG_INFO(
            "--temporal-tiling: the %s VAE decodes one latent frame (4 frames) at a time through "
            "its causal cache already",
            m.family_name.c_str());
    if (m.high_noise_diffusion) r.high_noise = to_high_noise_stage(ctx.model, p);
    return r;
}

void settle_vid_gen_params(const RequestContext& ctx, sd_vid_gen_params_t& p) {
    const ImageRequest r = to_video_request(ctx, p);
    p.seed = r.seed;
    p.width = r.width;
    p.height = r.height;
    p.video_frames = r.frames;
    write_back_sampling({r.method, r.scheduler, r.steps, r.flow_shift}, p.sample_params);
    if (ctx.model.components.high_noise_diffusion)
        p.high_noise_sample_params.sample_method = r.high_noise.method;
    else if (p.high_noise_sample_params.sample_method == SAMPLE_METHOD_COUNT)
        p.high_noise_sample_params.sample_method = default_sample_method(&ctx.model);
}

std::vector<LoraRequest> lora_requests(const sd_lora_t* loras, uint32_t count,
                                       const ModelComponents& m) {
    std::vector<LoraRequest> out;
    for (uint32_t i = 0; i < count && loras; ++i) {
        const sd_lora_t& l = loras[i];
        SD_CHECK(has(l.path), "LoRA %u has no path", i);
        if (l.is_high_noise && !m.high_noise_diffusion) {
            SD_LOG_WARN(
                "LoRA '%s' is for a high-noise expert, which the %s model has not "
                "(--high-noise-diffusion-model); ignoring it",
                l.path, m.family_name.c_str());
            continue;
        }
        out.push_back({l.path, l.multiplier, l.is_high_noise});
    }
    return out;
}

}  // namespace sd::api

extern "C" {

int64_t sd_batch_image_seed(int64_t seed, int index) {
    return sd::batch_image_seed(seed, index);
}

bool sd_check_prompt_text(const char* text, size_t length, int max_tokens, const char* what,
                          char* message, size_t message_size) {
    try {
        if (!text && length > 0) sd::fail("sd_check_prompt_text: %zu bytes but no text", length);
        sd::check_prompt_bytes(std::string_view(text ? text : "", text ? length : 0), max_tokens,
                               what && *what ? what : "prompt");
        return true;
    } catch (const std::exception& e) {
        sd::api::hand_out_message(e.what(), message, message_size);
        return false;
    }
}

}  // extern "C"
