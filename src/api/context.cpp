// The C API's image generation: sd_ctx_t owns the opened model files and the loaded
// networks; generate_image has its sd_img_gen_params_t settled into a pipeline request
// (api/image_request.h, the one resolver) and runs it. Every entry point catches what the
// engine throws, logs it (or hands it out) and returns NULL or false.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "adapters/lora_apply.h"
#include "adapters/lora_fit.h"
#include "api/c_enum.h"
#include "api/c_images.h"
#include "api/c_message.h"
#include "api/callbacks.h"
#include "api/image_request.h"
#include "api/placement.h"
#include "api/preview_tap.h"
#include "api/role_paths.h"
#include "base/error.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "families/parts/unet.h"
#include "families/registry.h"
#include "ops/compute_type.h"
#include "pipeline/decode_tiling.h"
#include "pipeline/device_placement.h"
#include "pipeline/generate.h"
#include "pipeline/taehv_codec.h"
#include "stable-diffusion-ext.h"

struct sd_ctx_t {
    sd::ModelFiles files;
    sd::LoadedModel model;
    // The codec that does not decode the images: the VAE when --taesd replaces it, or TAESD
    // kept for previews only (tae_preview_only). tae / vae point at whichever are loaded.
    std::unique_ptr<sd::LatentCodec> spare_codec;
    const sd::LatentCodec* tae = nullptr;
    const sd::LatentCodec* vae = nullptr;
    rng_type_t rng_type = CUDA_RNG;
    rng_type_t sampler_rng_type = RNG_TYPE_COUNT;
    sd::LoraMode lora_mode = sd::LoraMode::Immediately;
    sd::LoraSet loras;  // the LoRAs of the last generation, kept while the list stays the same
    // SD_CANCEL_ALL stops the generation; SD_CANCEL_NEW_LATENTS lets the current image finish.
    sd::CancelToken cancel;
    std::atomic<bool> stop_after_image{false};
    std::atomic<int> max_prompt_tokens{SD_DEFAULT_MAX_PROMPT_TOKENS};
    std::mutex generating;  // one generation at a time on a context
};

namespace {

bool has(const char* s) {
    return s != nullptr && s[0] != '\0';
}

// Options for parts this build does not have are accepted by sd_ctx_params_init and
// refused here, naming the option.
void reject_unbuilt(const sd_ctx_params_t& p) {
    // A component file of a role no model family takes; the loader names the family for a
    // role some family takes but the model's does not.
    for (const sd::ComponentRole& role : sd::component_roles()) {
        if (has(sd::api::role_path(p, role.role)) && role.role != sd::ModelRole::Checkpoint &&
            !sd::some_family_takes(role.role))
            sd::fail("%s (%s) is not supported by this build yet", role.option, role.name);
    }
    const std::pair<const char*, const char*> paths[] = {
        {p.ip_adapter_path, "--ip-adapter (IP-Adapter)"},
        {p.motion_module_path, "--motion-module (AnimateDiff)"},
        {p.photo_maker_path, "--photo-maker"},
        {p.pulid_weights_path, "--pulid-weights (PuLID)"},
        {p.rpc_servers, "--rpc-servers (remote devices)"},
        {p.split_mode, "--split-mode (multi-device splitting)"},
    };
    for (const auto& [value, option] : paths) {
        if (has(value)) sd::fail("%s is not supported by this build yet", option);
    }
    // Options this build would otherwise take and not act on: refused, naming them.
    if (p.force_sdxl_vae_conv_scale)
        sd::fail("--force-sdxl-vae-conv-scale is not supported by this build yet");
    if (sd::api::c_enum_int(p.vae_format) != SD_VAE_FORMAT_AUTO)
        sd::fail(
            "--vae-format (%d): only auto, the format read from the VAE's weights, is "
            "supported by this build",
            sd::api::c_enum_int(p.vae_format));
    if (sd::api::c_enum_int(p.wtype) != SD_TYPE_COUNT)
        sd::fail(
            "--type for image generation is not supported yet; convert the model with -M convert");
}

// --taesd: TAESD (TAEHV for a video model) decodes (and encodes) in place of the VAE, or with
// tae_preview_only serves the previews alone, as the reference.
void attach_taesd(sd_ctx_t& ctx, const char* path, bool preview_only, sd::Residency residency) {
    sd::ModelComponents& m = ctx.model.components;
    // On the VAE's device where the VAE runs on one.
    std::unique_ptr<sd::LatentCodec> tae =
        sd::placed_like_the_codec(m, sd::load_tiny_codec(path, m.latent, m.video, residency));
    ctx.tae = tae.get();
    if (preview_only) {
        ctx.spare_codec = std::move(tae);
    } else {
        ctx.spare_codec = std::move(m.codec);
        m.codec = std::move(tae);
    }
}

sd_ctx_t* create(const sd_ctx_params_t& p, const sd_ctx_ext_params_t& ext) {
    reject_unbuilt(p);
    // A caller's number outside an enum is refused by name before anything loads.
    const rng_type_t rng_type = sd::api::c_enum(p.rng_type, RNG_TYPE_COUNT, "rng_type");
    const rng_type_t sampler_rng_type =
        sd::api::c_enum_or_unset(p.sampler_rng_type, RNG_TYPE_COUNT, "sampler_rng_type");
    const lora_apply_mode_t lora_apply_mode =
        sd::api::c_enum(p.lora_apply_mode, LORA_APPLY_MODE_COUNT, "lora_apply_mode");
    const prediction_t prediction =
        sd::api::c_enum_or_unset(p.prediction, PREDICTION_COUNT, "prediction");
    SD_CHECK(has(p.model_path) || has(p.diffusion_model_path),
             "no model given: set a model (-m) or a diffusion model");
    // backend / params_backend / max_vram / model_args (api/placement.h).
    const sd::api::Placement placement = sd::api::read_placement(p);
    // runscope: -t is the context's, applied per run (pipeline/run_scope.h) and to its loading.
    const int threads = sd::threads_that_help(p.n_threads);
    const sd::ScopedThreadCount load_threads(threads);
    auto ctx = std::make_unique<sd_ctx_t>();
    // Every component file, in the role table's order (the reference's).
    for (const sd::ComponentRole& role : sd::component_roles()) {
        const char* path = sd::api::role_path(p, role.role);
        if (!has(path)) continue;
        try {
            ctx->files.add(path, role.role);
        } catch (const sd::Error& e) {
            sd::fail("%s: %s", role.option, e.what());
        }
    }
    sd::LoadOptions options;
    options.model_path = has(p.model_path) ? p.model_path : p.diffusion_model_path;
    options.prediction = prediction;
    options.memory.residency = placement.residency;
    options.memory.keep_text_encoder = placement.keep_text_encoder;
    options.memory.keep_vae = placement.keep_vae;
    options.devices = placement.devices;
    // sd_ctx_ext_params_t over model_args' compute_type / tokenizer_dir.
    const sd::api::EngineOptions own = sd::api::engine_options(placement, ext);
    // The context's own: applied to the generating thread only (ScopedComputeType).
    options.memory.compute = sd::supported_compute_type(own.compute_type);
    options.memory.threads = threads;
    options.tokenizer_dir = own.tokenizer_dir;
    options.chroma = placement.chroma;
    options.qwen_image_zero_cond_t = placement.qwen_image_zero_cond_t;
    for (uint32_t i = 0; i < p.embedding_count && p.embeddings; ++i) {
        SD_CHECK(has(p.embeddings[i].path), "embedding %u has no path", i);
        options.embeddings.push_back(
            {has(p.embeddings[i].name) ? p.embeddings[i].name : "", p.embeddings[i].path});
    }
    ctx->model = sd::load_model(ctx->files, options);
    ctx->vae = ctx->model.components.codec.get();
    if (has(p.taesd_path))
        attach_taesd(*ctx, p.taesd_path, p.tae_preview_only, placement.residency);
    if (has(p.control_net_path)) {
        sd::ModelComponents& m = ctx->model.components;
        m.control = sd::placed_control_model(
            m, sd::load_control_net(p.control_net_path, m, options.memory));
    }
    ctx->rng_type = rng_type;
    ctx->sampler_rng_type = sampler_rng_type;
    ctx->lora_mode = sd::resolve_lora_mode(lora_apply_mode, ctx->files);
    ctx->max_prompt_tokens = own.max_prompt_tokens;
    return ctx.release();
}

sd::api::RequestContext request_context(const sd_ctx_t& ctx) {
    return {ctx.model, ctx.rng_type, ctx.sampler_rng_type, ctx.max_prompt_tokens.load()};
}

// A VAE kept for previews leaves RSS after a generation, as the decoding codec does.
struct ReleaseSpareCodec {
    const sd_ctx_t& ctx;
    ~ReleaseSpareCodec() {
        if (ctx.spare_codec && !ctx.model.components.memory.keep_vae)
            ctx.spare_codec->release_weights();
    }
};

// The progress callback's view of a generation: each step with its own seconds.
std::function<void(int, int, float)> progress_reporter() {
    return [last = 0.0f](int step, int steps, float seconds) mutable {
        if (step == 1) last = 0.0f;
        sd::api::report_progress(step, steps, seconds - last);
        last = seconds;
    };
}

// Runs the settled request and hands out its images (a video's frames); false when cancelled.
bool run_and_hand_out(sd_ctx_t& ctx, const sd::ImageRequest& request,
                      const sd::GenerationHooks& hooks, sd_image_t** out, int* count) {
    std::vector<sd::image::Image> images;
    try {
        images = sd::generate_images(ctx.model.components, request, hooks);
    } catch (const sd::Cancelled&) {
        SD_LOG_WARN("generation cancelled");
        return false;
    }
    *out = sd::api::to_c_images(images);
    *count = static_cast<int>(images.size());
    return true;
}

}  // namespace

extern "C" {

sd_ctx_t* new_sd_ctx(const sd_ctx_params_t* params) {
    return new_sd_ctx_ext(params, nullptr);
}

sd_ctx_t* new_sd_ctx_ext(const sd_ctx_params_t* params, const sd_ctx_ext_params_t* ext_params) {
    if (!params) {
        SD_LOG_ERROR("new_sd_ctx: no parameters");
        return nullptr;
    }
    sd_ctx_ext_params_t ext;
    sd_ctx_ext_params_init(&ext);
    if (ext_params) ext = *ext_params;
    try {
        return create(*params, ext);
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return nullptr;
    }
}

void free_sd_ctx(sd_ctx_t* sd_ctx) {
    if (!sd_ctx) return;
    // A generation still running ends first; the lock is released before the mutex dies
    // with the context (ThreadSanitizer caught the unlock after the delete).
    { std::lock_guard<std::mutex> wait_for_generation(sd_ctx->generating); }
    delete sd_ctx;
}

enum sample_method_t sd_get_default_sample_method(const sd_ctx_t* sd_ctx) {
    return sd::api::default_sample_method(sd_ctx ? &sd_ctx->model : nullptr);
}

enum scheduler_t sd_get_default_scheduler(const sd_ctx_t* sd_ctx,
                                          enum sample_method_t sample_method) {
    return sd::api::default_scheduler(sd_ctx ? &sd_ctx->model : nullptr, sample_method);
}

bool sd_settle_img_gen_params(const sd_ctx_t* sd_ctx, sd_img_gen_params_t* params, char* message,
                              size_t message_size) {
    try {
        if (!sd_ctx || !params)
            sd::fail("sd_settle_img_gen_params: needs a context and parameters");
        sd::api::write_back(sd::api::to_request(request_context(*sd_ctx), *params), *params);
        return true;
    } catch (const std::exception& e) {
        if (!message) SD_LOG_ERROR("%s", e.what());
        sd::api::hand_out_message(e.what(), message, message_size);
        return false;
    }
}

bool sd_settle_vid_gen_params(const sd_ctx_t* sd_ctx, sd_vid_gen_params_t* params, char* message,
                              size_t message_size) {
    try {
        if (!sd_ctx || !params)
            sd::fail("sd_settle_vid_gen_params: needs a context and parameters");
        sd::api::settle_vid_gen_params(request_context(*sd_ctx), *params);
        return true;
    } catch (const std::exception& e) {
        if (!message) SD_LOG_ERROR("%s", e.what());
        sd::api::hand_out_message(e.what(), message, message_size);
        return false;
    }
}

namespace {

// One generation, under the context's lock: its hooks (progress, cancel, previews; stopping
// after an image for images), the LoRAs merged on the context's threads (before the
// generation's run scope), the request run and its images handed out.
bool run_generation(sd_ctx_t& ctx, const sd::ImageRequest& request, const sd_lora_t* loras,
                    uint32_t lora_count, bool video, sd_image_t** out, int* count) {
    const sd::ModelComponents& m = ctx.model.components;
    sd::GenerationHooks hooks;
    hooks.progress = progress_reporter();
    hooks.cancel = &ctx.cancel;
    if (!video) hooks.stop_after_image = &ctx.stop_after_image;
    hooks.preview = sd::api::preview_tap(
        m, ctx.tae, ctx.vae,
        sd::decode_tiling(m, request.vae_tiling, request.height / m.latent.factor,
                          request.width / m.latent.factor),
        video);
    const sd::ScopedThreadCount lora_threads(m.memory.threads);
    const sd::WeightPatches* patches = ctx.loras.update(
        ctx.files, sd::api::lora_requests(loras, lora_count, m), ctx.lora_mode, m.family_name);
    const sd::ScopedWeightPatches active(patches);
    const ReleaseSpareCodec release_spare{ctx};
    return run_and_hand_out(ctx, request, hooks, out, count);
}

}  // namespace

bool generate_image(sd_ctx_t* sd_ctx, const sd_img_gen_params_t* params, sd_image_t** images_out,
                    int* num_images_out) {
    if (images_out) *images_out = nullptr;
    if (num_images_out) *num_images_out = 0;
    if (!sd_ctx || !params || !images_out || !num_images_out) {
        SD_LOG_ERROR("generate_image: needs a context, parameters and both output pointers");
        return false;
    }
    std::lock_guard<std::mutex> one_at_a_time(sd_ctx->generating);
    sd_ctx->cancel.reset();
    sd_ctx->stop_after_image = false;
    try {
        const sd::ImageRequest request = sd::api::to_request(request_context(*sd_ctx), *params);
        return run_generation(*sd_ctx, request, params->loras, params->lora_count,
                              /*video=*/false, images_out, num_images_out);
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return false;
    }
}

bool sd_ctx_supports_video_generation(const sd_ctx_t* sd_ctx) {
    return sd_ctx != nullptr && sd_ctx->model.components.video;
}

bool generate_video(sd_ctx_t* sd_ctx, const sd_vid_gen_params_t* params, sd_image_t** frames_out,
                    int* num_frames_out, sd_audio_t** audio_out) {
    if (frames_out) *frames_out = nullptr;
    if (num_frames_out) *num_frames_out = 0;
    if (audio_out) *audio_out = nullptr;  // no video family here makes sound
    if (!sd_ctx || !params || !frames_out || !num_frames_out) {
        SD_LOG_ERROR("generate_video: needs a context, parameters and both frame pointers");
        return false;
    }
    std::lock_guard<std::mutex> one_at_a_time(sd_ctx->generating);
    sd_ctx->cancel.reset();
    sd_ctx->stop_after_image = false;
    try {
        const sd::ImageRequest request =
            sd::api::to_video_request(request_context(*sd_ctx), *params);
        return run_generation(*sd_ctx, request, params->loras, params->lora_count,
                              /*video=*/true, frames_out, num_frames_out);
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return false;
    }
}

bool sd_ctx_load_control_net(sd_ctx_t* sd_ctx, const char* path) {
    if (!sd_ctx || !has(path)) {
        SD_LOG_ERROR("sd_ctx_load_control_net: needs a context and a file path");
        return false;
    }
    std::lock_guard<std::mutex> not_while_generating(sd_ctx->generating);
    try {
        sd::ModelComponents& m = sd_ctx->model.components;
        m.control = sd::placed_control_model(m, sd::load_control_net(path, m, m.memory));
        return true;
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return false;
    }
}

bool sd_ctx_unload_control_net(sd_ctx_t* sd_ctx) {
    if (!sd_ctx) return false;
    std::lock_guard<std::mutex> not_while_generating(sd_ctx->generating);
    sd_ctx->model.components.control.reset();
    return true;
}

bool sd_ctx_has_control_net(const sd_ctx_t* sd_ctx) {
    return sd_ctx && sd_ctx->model.components.control != nullptr;
}

bool sd_lora_fits(const sd_ctx_t* sd_ctx, const char* lora_path, char* message,
                  size_t message_size) {
    try {
        if (!sd_ctx || !has(lora_path)) sd::fail("sd_lora_fits: needs a context and a file path");
        // The files and the family are set when the context is made: no lock needed, so a
        // server checks requests while a generation runs.
        sd::check_lora_fits(lora_path, sd_ctx->files, sd_ctx->model.components.family_name);
        return true;
    } catch (const std::exception& e) {
        sd::api::hand_out_message(e.what(), message, message_size);
        return false;
    }
}

bool sd_takes_ref_images(const sd_ctx_t* sd_ctx) {
    return sd_ctx && sd_ctx->model.components.ref_images.supported;
}

void sd_ctx_set_max_prompt_tokens(sd_ctx_t* sd_ctx, int max_tokens) {
    if (sd_ctx) sd_ctx->max_prompt_tokens = std::max(0, max_tokens);
}

void sd_cancel_generation(sd_ctx_t* sd_ctx, enum sd_cancel_mode_t mode) {
    if (!sd_ctx) return;
    switch (mode) {
        case SD_CANCEL_ALL:
            sd_ctx->cancel.cancel();
            break;
        case SD_CANCEL_NEW_LATENTS:
            sd_ctx->stop_after_image = true;
            break;
        default:
            sd_ctx->cancel.reset();
            sd_ctx->stop_after_image = false;
    }
}

}  // extern "C"
