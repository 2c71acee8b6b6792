// The C API's image generation: sd_ctx_t owns the opened model files and the loaded
// networks; generate_image turns sd_img_gen_params_t into a pipeline request. Every entry
// point catches what the engine throws, logs it and returns NULL or false.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "adapters/lora_apply.h"
#include "adapters/lora_fit.h"
#include "api/c_images.h"
#include "api/callbacks.h"
#include "api/placement.h"
#include "api/preview_tap.h"
#include "api/prompt_limit.h"
#include "base/error.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "families/registry.h"
#include "families/unet_components.h"
#include "ops/compute_type.h"
#include "pipeline/generate.h"
#include "pipeline/image_size.h"
#include "pipeline/taesd_codec.h"
#include "stable-diffusion-ext.h"

static_assert(sd::kMaxPromptBytesPerToken == SD_MAX_PROMPT_BYTES_PER_TOKEN);

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
    int max_prompt_tokens = SD_DEFAULT_MAX_PROMPT_TOKENS;
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
        {p.llm_path, "--llm"},
        {p.llm_vision_path, "--llm_vision"},
        {p.high_noise_diffusion_model_path, "--high-noise-diffusion-model"},
        {p.uncond_diffusion_model_path, "--uncond-diffusion-model"},
        {p.embeddings_connectors_path, "--embeddings-connectors"},
        {p.audio_vae_path, "--audio-vae"},
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
    if (p.vae_format != SD_VAE_FORMAT_AUTO)
        sd::fail(
            "--vae-format (%d): only auto, the format read from the VAE's weights, is "
            "supported by this build",
            static_cast<int>(p.vae_format));
    if (p.wtype != SD_TYPE_COUNT)
        sd::fail(
            "--type for image generation is not supported yet; convert the model with -M convert");
}

// --taesd: TAESD decodes (and encodes) in place of the VAE, or with tae_preview_only serves
// the previews alone, as the reference.
void attach_taesd(sd_ctx_t& ctx, const char* path, bool preview_only, sd::Residency residency) {
    sd::ModelComponents& m = ctx.model.components;
    std::unique_ptr<sd::LatentCodec> tae = sd::load_taesd_codec(path, m.latent, residency);
    ctx.tae = tae.get();
    if (preview_only) {
        ctx.spare_codec = std::move(tae);
    } else {
        ctx.spare_codec = std::move(m.codec);
        m.codec = std::move(tae);
    }
}

sd_ctx_t* create(const sd_ctx_params_t& p) {
    reject_unbuilt(p);
    SD_CHECK(has(p.model_path) || has(p.diffusion_model_path),
             "no model given: set a model (-m) or a diffusion model");
    // backend / params_backend / max_vram / model_args (api/placement.h).
    const sd::api::Placement placement = sd::api::read_placement(p);
    // runscope: -t is the context's, applied per run (pipeline/run_scope.h) and to its loading.
    const int threads = sd::threads_that_help(p.n_threads);
    const sd::ScopedThreadCount load_threads(threads);
    auto ctx = std::make_unique<sd_ctx_t>();
    if (has(p.model_path)) ctx->files.add(p.model_path, sd::ModelRole::Checkpoint);
    if (has(p.diffusion_model_path))
        ctx->files.add(p.diffusion_model_path, sd::ModelRole::DiffusionModel);
    if (has(p.clip_l_path)) ctx->files.add(p.clip_l_path, sd::ModelRole::TextEncoder);
    if (has(p.clip_g_path)) ctx->files.add(p.clip_g_path, sd::ModelRole::TextEncoder2);
    if (has(p.t5xxl_path)) ctx->files.add(p.t5xxl_path, sd::ModelRole::T5);
    if (has(p.vae_path)) ctx->files.add(p.vae_path, sd::ModelRole::Vae);
    sd::LoadOptions options;
    options.model_path = has(p.model_path) ? p.model_path : p.diffusion_model_path;
    options.prediction = p.prediction;
    options.memory.residency = placement.residency;
    options.memory.keep_text_encoder = placement.keep_text_encoder;
    options.memory.keep_vae = placement.keep_vae;
    // The context's own: applied to the generating thread only (ScopedComputeType).
    options.memory.compute = sd::supported_compute_type(placement.compute_type);
    options.memory.threads = threads;  // runscope
    options.tokenizer_dir = placement.tokenizer_dir;
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
        ctx->model.components.control =
            sd::load_control_net(p.control_net_path, ctx->model.components, options.memory);
    }
    ctx->rng_type = p.rng_type;
    ctx->sampler_rng_type = p.sampler_rng_type;
    ctx->lora_mode = sd::resolve_lora_mode(p.lora_apply_mode, ctx->files);
    return ctx.release();
}

void reject_unbuilt(const sd_img_gen_params_t& p) {
    if (p.pm_params.id_images_count > 0) sd::fail("PhotoMaker is not supported by this build yet");
    if (p.ip_adapter_image.data)
        sd::fail("--ip-adapter-image needs IP-Adapter, which this build does not have yet");
    if (has(p.pulid_params.id_embedding_path))
        sd::fail("PuLID (--pulid-id-embedding) is not supported by this build yet");
    if (p.circular_x || p.circular_y) sd::fail("--circular padding is not supported yet");
    if (p.cache.mode != SD_CACHE_DISABLED)
        sd::fail("--cache-mode is not supported by this build yet");
    // Options that would otherwise be taken and not acted on: refused, naming them.
    const sd_sample_params_t& s = p.sample_params;
    if (s.shifted_timestep > 0)
        sd::fail("--timestep-shift (SDXL timestep shifting) is not supported by this build yet");
    const float img_cfg = s.guidance.img_cfg;
    if (std::isfinite(img_cfg) && img_cfg != 1.0f && img_cfg != s.guidance.txt_cfg)
        sd::fail("--img-cfg-scale %g: image guidance is not supported by this build yet", img_cfg);
    if (has(s.extra_sample_args))
        sd::fail("--extra-sample-args is not supported by this build yet");
    const sd_tiling_params_t& t = p.vae_tiling_params;
    if (t.rel_size_x > 0 || t.rel_size_y > 0)
        sd::fail(
            "--vae-relative-tile-size is not supported by this build yet; give "
            "--vae-tile-size");
    if (t.tile_size_y > 0 && t.tile_size_x > 0 && t.tile_size_y != t.tile_size_x)
        sd::fail("--vae-tile-size %dx%d: tiles are square in this build (give one size)",
                 t.tile_size_x, t.tile_size_y);
    if (has(t.extra_tiling_args))
        sd::fail("--extra-tiling-args is not supported by this build yet");
}

sd::HiresRequest to_hires(const sd_hires_params_t& p, int width, int height,
                          const sd::ModelComponents& m) {
    sd::HiresRequest h;
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
    SD_CHECK(p.upscaler >= 0 && p.upscaler < SD_HIRES_UPSCALER_COUNT, "unknown hires upscaler %d",
             static_cast<int>(p.upscaler));
    SD_CHECK(p.upscaler != SD_HIRES_UPSCALER_MODEL || !h.model_path.empty(),
             "hires upscaler Model needs a model file (hires model_path)");
    sd::resolve_hires_target(h, width, height, p.scale, sd::size_multiple(m));
    return h;
}

sd::ImageRequest to_request(const sd_ctx_t& ctx, const sd_img_gen_params_t& p) {
    reject_unbuilt(p);
    sd::ImageRequest r;
    r.prompt = p.prompt ? p.prompt : "";
    r.max_prompt_tokens = ctx.max_prompt_tokens;
    r.negative_prompt = p.negative_prompt ? p.negative_prompt : "";
    r.clip_skip = p.clip_skip;
    r.width = p.width;
    r.height = p.height;
    // Before the hires target, which the reference derives from the aligned size.
    sd::align_size_up(r.width, r.height, sd::size_multiple(ctx.model.components),
                      "generation request");
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
    r.guidance = s.guidance.distilled_guidance;
    r.eta = s.eta;
    if (s.custom_sigmas && s.custom_sigmas_count > 0)
        r.custom_sigmas.assign(s.custom_sigmas, s.custom_sigmas + s.custom_sigmas_count);
    r.seed = sd::resolve_seed(p.seed);
    r.batch_count = p.batch_count;
    r.rng = ctx.rng_type;
    r.sampler_rng = ctx.sampler_rng_type;
    r.init_image = sd::api::to_image8(p.init_image, "init image");
    r.mask_image = sd::api::to_image8(p.mask_image, "mask image");
    r.strength = p.strength;
    r.control_image = sd::api::to_image8(p.control_image, "control image");
    SD_CHECK(p.ref_images_count >= 0 && (p.ref_images || p.ref_images_count == 0),
             "ref_images: %d images but no array", p.ref_images_count);
    for (int i = 0; i < p.ref_images_count; ++i) {
        const std::string what = "reference image " + std::to_string(i + 1);
        auto image = sd::api::to_image8(p.ref_images[i], what.c_str());
        SD_CHECK(image.has_value(), "%s has no pixels (data is NULL)", what.c_str());
        r.ref_images.push_back(std::move(*image));
    }
    r.ref_image_args = has(p.ref_image_args) ? p.ref_image_args : "";
    r.control_strength = p.control_strength;
    r.vae_tiling.enabled = p.vae_tiling_params.enabled;
    if (p.vae_tiling_params.tile_size_x > 0)
        r.vae_tiling.tile_size = p.vae_tiling_params.tile_size_x;
    if (p.vae_tiling_params.target_overlap > 0)
        r.vae_tiling.overlap = p.vae_tiling_params.target_overlap;
    if (p.hires.enabled) r.hires = to_hires(p.hires, r.width, r.height, ctx.model.components);
    const sd_slg_params_t& slg = s.guidance.slg;
    if (slg.layers && slg.layer_count > 0)
        r.slg.layers.assign(slg.layers, slg.layers + slg.layer_count);
    r.slg.start = slg.layer_start;
    r.slg.end = slg.layer_end;
    r.slg.scale = slg.scale;
    SD_CHECK(!r.slg.active() || ctx.model.components.diffusion->can_skip_layers(),
             "skip-layer guidance (--slg-scale %g) needs a model whose blocks can be skipped "
             "(SD3); %s has none",
             r.slg.scale, ctx.model.components.family_name.c_str());
    return r;
}

// The image LoRAs of a request; high-noise ones belong to a video model's second stage.
std::vector<sd::LoraRequest> lora_requests(const sd_img_gen_params_t& p) {
    std::vector<sd::LoraRequest> out;
    for (uint32_t i = 0; i < p.lora_count && p.loras; ++i) {
        const sd_lora_t& l = p.loras[i];
        SD_CHECK(has(l.path), "LoRA %u has no path", i);
        if (l.is_high_noise) {
            SD_LOG_WARN(
                "LoRA '%s' is for a high-noise model, which an image model has not; "
                "ignoring it",
                l.path);
            continue;
        }
        out.push_back({l.path, l.multiplier});
    }
    return out;
}

// A VAE kept for previews leaves RSS after a generation, as the decoding codec does.
struct ReleaseSpareCodec {
    const sd_ctx_t& ctx;
    ~ReleaseSpareCodec() {
        if (ctx.spare_codec && !ctx.model.components.memory.keep_vae)
            ctx.spare_codec->release_weights();
    }
};

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

// The reference's order: an EDM v-prediction model takes exponential; lcm and tcd the LCM
// schedule; ddim_trailing the simple one; then the family's own (flux for FLUX).
enum scheduler_t sd_get_default_scheduler(const sd_ctx_t* sd_ctx,
                                          enum sample_method_t sample_method) {
    const sd::Denoiser* denoiser = sd_ctx ? sd_ctx->model.components.denoiser.get() : nullptr;
    if (denoiser && denoiser->prediction() == EDM_V_PRED) return EXPONENTIAL_SCHEDULER;
    if (sample_method == LCM_SAMPLE_METHOD || sample_method == TCD_SAMPLE_METHOD)
        return LCM_SCHEDULER;
    if (sample_method == DDIM_TRAILING_SAMPLE_METHOD) return SIMPLE_SCHEDULER;
    if (sd_ctx && sd_ctx->model.family) return sd_ctx->model.family->defaults.scheduler;
    return DISCRETE_SCHEDULER;
}

namespace {

// sample_params.flow_shift (--flow-shift; INFINITY: the model's own) swaps a flow model's
// denoiser for one generation and puts the model's back afterwards; a model that is not a flow
// model has no shift, which the log says.
class ScopedFlowShift {
  public:
    ScopedFlowShift(sd::ModelComponents& m, float shift) : m_(m) {
        if (!std::isfinite(shift)) return;
        if (!m.denoiser->is_flow()) {
            SD_LOG_WARN("flow_shift %g ignored: the %s model is not a flow model", shift,
                        m.family_name.c_str());
            return;
        }
        SD_LOG_INFO("flow shift %g for this generation", shift);
        saved_ = std::exchange(m.denoiser, sd::make_denoiser(m.denoiser->prediction(), shift));
    }
    ~ScopedFlowShift() {
        if (saved_) m_.denoiser = std::move(saved_);
    }
    ScopedFlowShift(const ScopedFlowShift&) = delete;
    ScopedFlowShift& operator=(const ScopedFlowShift&) = delete;

  private:
    sd::ModelComponents& m_;
    std::unique_ptr<sd::Denoiser> saved_;
};

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
        sd::ImageRequest request = to_request(*sd_ctx, *params);
        sd::GenerationHooks hooks;
        float last = 0.0f;
        hooks.progress = [&last](int step, int steps, float seconds) {
            if (step == 1) last = 0.0f;
            sd::api::report_progress(step, steps, seconds - last);
            last = seconds;
        };
        hooks.cancel = &sd_ctx->cancel;
        hooks.stop_after_image = &sd_ctx->stop_after_image;
        const ScopedFlowShift flow_shift(sd_ctx->model.components,
                                         params->sample_params.flow_shift);
        const sd::ModelComponents& m = sd_ctx->model.components;
        hooks.preview = sd::api::preview_tap(
            m, sd_ctx->tae, sd_ctx->vae,
            sd::decode_tiling(m, request.vae_tiling, request.height / m.latent.factor,
                              request.width / m.latent.factor));
        const sd::WeightPatches* patches =
            sd_ctx->loras.update(sd_ctx->files, lora_requests(*params), sd_ctx->lora_mode,
                                 sd_ctx->model.components.family_name);
        const sd::ScopedWeightPatches active(patches);
        std::vector<sd::image::Image> images;
        const ReleaseSpareCodec release_spare{*sd_ctx};
        try {
            images = sd::generate_images(sd_ctx->model.components, request, hooks);
        } catch (const sd::Cancelled&) {
            SD_LOG_WARN("generation cancelled");
            return false;
        }
        *images_out = sd::api::to_c_images(images);
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

bool sd_lora_fits(const sd_ctx_t* sd_ctx, const char* lora_path, char* message,
                  size_t message_size) {
    std::string why;
    try {
        if (!sd_ctx || !has(lora_path)) sd::fail("sd_lora_fits: needs a context and a file path");
        // The files and the family are set when the context is made: no lock needed, so a
        // server checks requests while a generation runs.
        sd::check_lora_fits(lora_path, sd_ctx->files, sd_ctx->model.components.family_name);
        return true;
    } catch (const std::exception& e) {
        why = e.what();
    }
    if (message && message_size > 0) {
        const size_t n = std::min(why.size(), message_size - 1);
        why.copy(message, n);
        message[n] = '\0';
    }
    return false;
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
