// The C API's image generation: sd_ctx_t owns the opened model files and the loaded
// networks; generate_image turns sd_img_gen_params_t into a pipeline request. Every entry
// point catches what the engine throws, logs it and returns NULL or false.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/callbacks.h"
#include "api/placement.h"
#include "base/error.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "families/registry.h"
#include "families/unet_components.h"
#include "ops/compute_type.h"
#include "pipeline/generate.h"
#include "stable-diffusion.h"

struct sd_ctx_t {
    sd::ModelFiles files;
    sd::LoadedModel model;
    rng_type_t rng_type = CUDA_RNG;
    rng_type_t sampler_rng_type = RNG_TYPE_COUNT;
    std::atomic<int> cancel{0};
    std::mutex generating;  // one generation at a time on a context
};

namespace {

bool has(const char* s) {
    return s != nullptr && s[0] != '\0';
}

// Options for parts this build does not have are accepted by sd_ctx_params_init and
// refused here, naming the option.
void reject_unbuilt(const sd_ctx_params_t& p) {
    const std::pair<const char*, const char*> paths[] = {
        {p.clip_vision_path, "--clip_vision"},
        {p.t5xxl_path, "--t5xxl (SD3 / FLUX text encoder)"},
        {p.llm_path, "--llm"},
        {p.llm_vision_path, "--llm_vision"},
        {p.high_noise_diffusion_model_path, "--high-noise-diffusion-model"},
        {p.uncond_diffusion_model_path, "--uncond-diffusion-model"},
        {p.embeddings_connectors_path, "--embeddings-connectors"},
        {p.audio_vae_path, "--audio-vae"},
        {p.taesd_path, "--taesd (tiny autoencoder)"},
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
    if (p.wtype != SD_TYPE_COUNT)
        sd::fail(
            "--type for image generation is not supported yet; convert the model with -M convert");
}

sd_ctx_t* create(const sd_ctx_params_t& p) {
    reject_unbuilt(p);
    SD_CHECK(has(p.model_path) || has(p.diffusion_model_path),
             "no model given: set a model (-m) or a diffusion model");
    // backend / params_backend / max_vram / model_args (api/placement.h).
    const sd::api::Placement placement = sd::api::read_placement(p);
    sd::set_num_threads(sd::threads_that_help(p.n_threads));
    auto ctx = std::make_unique<sd_ctx_t>();
    if (has(p.model_path)) ctx->files.add(p.model_path, sd::ModelRole::Checkpoint);
    if (has(p.diffusion_model_path))
        ctx->files.add(p.diffusion_model_path, sd::ModelRole::DiffusionModel);
    if (has(p.clip_l_path)) ctx->files.add(p.clip_l_path, sd::ModelRole::TextEncoder);
    if (has(p.clip_g_path)) ctx->files.add(p.clip_g_path, sd::ModelRole::TextEncoder2);
    if (has(p.vae_path)) ctx->files.add(p.vae_path, sd::ModelRole::Vae);
    sd::LoadOptions options;
    options.model_path = has(p.model_path) ? p.model_path : p.diffusion_model_path;
    options.prediction = p.prediction;
    options.memory.residency = placement.residency;
    options.memory.keep_text_encoder = placement.keep_text_encoder;
    options.memory.keep_vae = placement.keep_vae;
    // The context's own: applied to the generating thread only (ScopedComputeType).
    options.memory.compute = sd::supported_compute_type(placement.compute_type);
    options.tokenizer_dir = placement.tokenizer_dir;
    for (uint32_t i = 0; i < p.embedding_count && p.embeddings; ++i) {
        SD_CHECK(has(p.embeddings[i].path), "embedding %u has no path", i);
        options.embeddings.push_back(
            {has(p.embeddings[i].name) ? p.embeddings[i].name : "", p.embeddings[i].path});
    }
    ctx->model = sd::load_model(ctx->files, options);
    if (has(p.control_net_path)) {
        ctx->model.components.control =
            sd::load_control_net(p.control_net_path, ctx->model.components, options.memory);
    }
    ctx->rng_type = p.rng_type;
    ctx->sampler_rng_type = p.sampler_rng_type;
    return ctx.release();
}

std::optional<sd::image::Image> to_image8(const sd_image_t& img, const char* what) {
    if (img.data == nullptr) return std::nullopt;
    SD_CHECK(img.width > 0 && img.height > 0 &&
                 (img.channel == 1 || img.channel == 3 || img.channel == 4),
             "%s of %ux%u with %u channels: expected 1, 3 or 4 channels", what, img.width,
             img.height, img.channel);
    sd::image::Image out;
    out.width = img.width;
    out.height = img.height;
    out.channels = img.channel;
    out.pixels.assign(img.data,
                      img.data + static_cast<size_t>(img.width) * img.height * img.channel);
    return out;
}

void reject_unbuilt(const sd_img_gen_params_t& p) {
    if (p.lora_count > 0) sd::fail("LoRA is not supported by this build yet");
    if (p.ref_images_count > 0)
        sd::fail("reference images (--ref-image) are not supported by this build yet");
    if (p.pm_params.id_images_count > 0) sd::fail("PhotoMaker is not supported by this build yet");
    if (p.ip_adapter_image.data)
        sd::fail("--ip-adapter-image needs IP-Adapter, which this build does not have yet");
    if (has(p.pulid_params.id_embedding_path))
        sd::fail("PuLID (--pulid-id-embedding) is not supported by this build yet");
    if (p.circular_x || p.circular_y) sd::fail("--circular padding is not supported yet");
    if (p.hires.enabled) sd::fail("--hires is not supported by this build yet");
    if (p.cache.mode != SD_CACHE_DISABLED)
        sd::fail("--cache-mode is not supported by this build yet");
    if (p.sample_params.guidance.slg.scale != 0.0f && p.sample_params.guidance.slg.layer_count > 0)
        sd::fail("skip-layer guidance is not supported by this build yet");
}

sd::ImageRequest to_request(const sd_ctx_t& ctx, const sd_img_gen_params_t& p) {
    reject_unbuilt(p);
    sd::ImageRequest r;
    r.prompt = p.prompt ? p.prompt : "";
    r.negative_prompt = p.negative_prompt ? p.negative_prompt : "";
    r.clip_skip = p.clip_skip;
    r.width = p.width;
    r.height = p.height;
    const sd_sample_params_t& s = p.sample_params;
    r.method = s.sample_method == SAMPLE_METHOD_COUNT ? sd_get_default_sample_method(&ctx)
                                                      : s.sample_method;
    r.scheduler =
        s.scheduler == SCHEDULER_COUNT ? sd_get_default_scheduler(&ctx, r.method) : s.scheduler;
    SD_CHECK(r.method >= 0 && r.method < SAMPLE_METHOD_COUNT, "unknown sampling method %d",
             static_cast<int>(r.method));
    SD_CHECK(r.scheduler >= 0 && r.scheduler < SCHEDULER_COUNT, "unknown scheduler %d",
             static_cast<int>(r.scheduler));
    r.steps = s.sample_steps;
    r.cfg_scale = s.guidance.txt_cfg;
    r.eta = s.eta;
    if (s.custom_sigmas && s.custom_sigmas_count > 0)
        r.custom_sigmas.assign(s.custom_sigmas, s.custom_sigmas + s.custom_sigmas_count);
    r.seed = sd::resolve_seed(p.seed);
    r.batch_count = p.batch_count;
    r.rng = ctx.rng_type;
    r.sampler_rng = ctx.sampler_rng_type;
    r.init_image = to_image8(p.init_image, "init image");
    r.mask_image = to_image8(p.mask_image, "mask image");
    r.strength = p.strength;
    r.control_image = to_image8(p.control_image, "control image");
    r.control_strength = p.control_strength;
    r.vae_tiling.enabled = p.vae_tiling_params.enabled;
    if (p.vae_tiling_params.tile_size_x > 0)
        r.vae_tiling.tile_size = p.vae_tiling_params.tile_size_x;
    if (p.vae_tiling_params.target_overlap > 0)
        r.vae_tiling.overlap = p.vae_tiling_params.target_overlap;
    return r;
}

sd_image_t* to_c_images(const std::vector<sd::image::Image>& images) {
    auto* out = static_cast<sd_image_t*>(std::calloc(images.size(), sizeof(sd_image_t)));
    SD_CHECK(out != nullptr, "out of memory for %zu result images", images.size());
    for (size_t i = 0; i < images.size(); ++i) {
        const sd::image::Image& img = images[i];
        out[i].width = img.width;
        out[i].height = img.height;
        out[i].channel = img.channels;
        out[i].data = static_cast<uint8_t*>(std::malloc(img.pixels.size()));
        if (!out[i].data) {
            free_sd_images(out, static_cast<int>(i));
            sd::fail("out of memory for a %ux%u result image", img.width, img.height);
        }
        std::copy(img.pixels.begin(), img.pixels.end(), out[i].data);
    }
    return out;
}

sd::CancelMode to_cancel_mode(int c_mode) {
    switch (c_mode) {
        case SD_CANCEL_ALL:
            return sd::CancelMode::All;
        case SD_CANCEL_NEW_LATENTS:
            return sd::CancelMode::AfterCurrentImage;
        default:
            return sd::CancelMode::None;
    }
}

}  // namespace

extern "C" {

sd_ctx_t* new_sd_ctx(const sd_ctx_params_t* params) {
    if (!params) {
        SD_LOG_ERROR("new_sd_ctx: no parameters");
        return nullptr;
    }
    try {
        return create(*params);
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return nullptr;
    }
}

void free_sd_ctx(sd_ctx_t* sd_ctx) {
    if (!sd_ctx) return;
    std::lock_guard<std::mutex> wait_for_generation(sd_ctx->generating);
    delete sd_ctx;
}

enum sample_method_t sd_get_default_sample_method(const sd_ctx_t* sd_ctx) {
    if (sd_ctx && sd_ctx->model.family) return sd_ctx->model.family->defaults.method;
    return EULER_A_SAMPLE_METHOD;
}

enum scheduler_t sd_get_default_scheduler(const sd_ctx_t* sd_ctx,
                                          enum sample_method_t sample_method) {
    if (sample_method == LCM_SAMPLE_METHOD) return LCM_SCHEDULER;
    if (sd_ctx && sd_ctx->model.family) return sd_ctx->model.family->defaults.scheduler;
    return DISCRETE_SCHEDULER;
}

bool generate_image(sd_ctx_t* sd_ctx, const sd_img_gen_params_t* params, sd_image_t** images_out,
                    int* num_images_out) {
    if (images_out) *images_out = nullptr;
    if (num_images_out) *num_images_out = 0;
    if (!sd_ctx || !params || !images_out || !num_images_out) {
        SD_LOG_ERROR("generate_image: needs a context, parameters and both output pointers");
        return false;
    }
    std::lock_guard<std::mutex> one_at_a_time(sd_ctx->generating);
    sd_ctx->cancel.store(static_cast<int>(sd::CancelMode::None));
    try {
        sd::ImageRequest request = to_request(*sd_ctx, *params);
        sd::GenerationHooks hooks;
        float last = 0.0f;
        hooks.progress = [&last](int step, int steps, float seconds) {
            if (step == 1) last = 0.0f;
            sd::api::report_progress(step, steps, seconds - last);
            last = seconds;
        };
        hooks.cancel = &sd_ctx->cancel;
        std::vector<sd::image::Image> images;
        try {
            images = sd::generate_images(sd_ctx->model.components, request, hooks);
        } catch (const sd::Cancelled&) {
            SD_LOG_WARN("generation cancelled");
            return false;
        }
        *images_out = to_c_images(images);
        *num_images_out = static_cast<int>(images.size());
        return true;
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
        m.control = sd::load_control_net(path, m, m.memory);
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

void sd_cancel_generation(sd_ctx_t* sd_ctx, enum sd_cancel_mode_t mode) {
    if (sd_ctx) sd_ctx->cancel.store(static_cast<int>(to_cancel_mode(mode)));
}

}  // extern "C"
