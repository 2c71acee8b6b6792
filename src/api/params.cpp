// Defaults of the C API's parameter structs (the reference library's values) and their
// text forms for logs. The *_to_str results are malloc'ed; the caller frees them.
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/c_enum.h"
#include "base/strfmt.h"
#include "stable-diffusion.h"

namespace {

const char* safe(const char* s) {
    return s ? s : "";
}

const char* yes_no(bool b) {
    return b ? "true" : "false";
}

char* to_c_string(const std::string& s) {
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    if (out) std::memcpy(out, s.c_str(), s.size() + 1);
    return out;
}

sd_tiling_params_t default_tiling() {
    return {false, false, 0, 0, 0.5f, 0.0f, 0.0f, nullptr};
}

// A C enum field's name by `name`, for a value from 0 to `last`; "?" for a caller's number
// outside it (read as an int first: api/c_enum.h).
template <class E>
const char* field_name(const E& field, E last, const char* (*name)(E)) {
    const int value = sd::api::c_enum_int(field);
    return value >= 0 && value <= static_cast<int>(last) ? name(static_cast<E>(value)) : "?";
}

const char* cache_mode_name(sd_cache_mode_t mode) {
    switch (mode) {
        case SD_CACHE_DISABLED:
            return "disabled";
        case SD_CACHE_EASYCACHE:
            return "easycache";
        case SD_CACHE_UCACHE:
            return "ucache";
        case SD_CACHE_DBCACHE:
            return "dbcache";
        case SD_CACHE_TAYLORSEER:
            return "taylorseer";
        case SD_CACHE_CACHE_DIT:
            return "cache-dit";
        case SD_CACHE_SPECTRUM:
            return "spectrum";
    }
    return "unknown";
}

std::string ctx_params_text(const sd_ctx_params_t* p) {
    return sd::strfmt(
        "model_path: %s\nclip_l_path: %s\nclip_g_path: %s\nclip_vision_path: %s\n"
        "t5xxl_path: %s\nllm_path: %s\nllm_vision_path: %s\ndiffusion_model_path: %s\n"
        "high_noise_diffusion_model_path: %s\nuncond_diffusion_model_path: %s\n"
        "embeddings_connectors_path: %s\nvae_path: %s\naudio_vae_path: %s\ntaesd_path: %s\n"
        "control_net_path: %s\nip_adapter_path: %s\nmotion_module_path: %s\n"
        "embedding_count: %u\nphoto_maker_path: %s\npulid_weights_path: %s\n"
        "tensor_type_rules: %s\nn_threads: %d\nwtype: %s\nrng_type: %s\nsampler_rng_type: %s\n"
        "prediction: %s\nlora_apply_mode: %s\nenable_mmap: %s\nflash_attn: %s\n"
        "diffusion_flash_attn: %s\ntae_preview_only: %s\ndiffusion_conv_direct: %s\n"
        "vae_conv_direct: %s\nforce_sdxl_vae_conv_scale: %s\nvae_format: %d\nmax_vram: %s\n"
        "stream_layers: %s\neager_load: %s\nbackend: %s\nparams_backend: %s\n"
        "split_mode: %s\nauto_fit: %s\nrpc_servers: %s\nmodel_args: %s\n",
        safe(p->model_path), safe(p->clip_l_path), safe(p->clip_g_path), safe(p->clip_vision_path),
        safe(p->t5xxl_path), safe(p->llm_path), safe(p->llm_vision_path),
        safe(p->diffusion_model_path), safe(p->high_noise_diffusion_model_path),
        safe(p->uncond_diffusion_model_path), safe(p->embeddings_connectors_path),
        safe(p->vae_path), safe(p->audio_vae_path), safe(p->taesd_path), safe(p->control_net_path),
        safe(p->ip_adapter_path), safe(p->motion_module_path), p->embedding_count,
        safe(p->photo_maker_path), safe(p->pulid_weights_path), safe(p->tensor_type_rules),
        p->n_threads, field_name(p->wtype, SD_TYPE_COUNT, sd_type_name),
        field_name(p->rng_type, RNG_TYPE_COUNT, sd_rng_type_name),
        field_name(p->sampler_rng_type, RNG_TYPE_COUNT, sd_rng_type_name),
        field_name(p->prediction, PREDICTION_COUNT, sd_prediction_name),
        field_name(p->lora_apply_mode, LORA_APPLY_MODE_COUNT, sd_lora_apply_mode_name),
        yes_no(p->enable_mmap), yes_no(p->flash_attn), yes_no(p->diffusion_flash_attn),
        yes_no(p->tae_preview_only), yes_no(p->diffusion_conv_direct), yes_no(p->vae_conv_direct),
        yes_no(p->force_sdxl_vae_conv_scale), sd::api::c_enum_int(p->vae_format), safe(p->max_vram),
        yes_no(p->stream_layers), yes_no(p->eager_load), safe(p->backend), safe(p->params_backend),
        safe(p->split_mode), yes_no(p->auto_fit), safe(p->rpc_servers), safe(p->model_args));
}

std::string sample_params_text(const sd_sample_params_t* p) {
    const sd_guidance_params_t& g = p->guidance;
    return sd::strfmt(
        "(txt_cfg: %.2f, img_cfg: %.2f, distilled_guidance: %.2f, slg.layer_count: %zu, "
        "slg.layer_start: %.2f, slg.layer_end: %.2f, slg.scale: %.2f, scheduler: %s, "
        "sample_method: %s, sample_steps: %d, eta: %.2f, shifted_timestep: %d, "
        "flow_shift: %.2f, extra_sample_args: %s)",
        g.txt_cfg, std::isfinite(g.img_cfg) ? g.img_cfg : g.txt_cfg, g.distilled_guidance,
        g.slg.layer_count, g.slg.layer_start, g.slg.layer_end, g.slg.scale,
        field_name(p->scheduler, SCHEDULER_COUNT, sd_scheduler_name),
        field_name(p->sample_method, SAMPLE_METHOD_COUNT, sd_sample_method_name), p->sample_steps,
        p->eta, p->shifted_timestep, p->flow_shift, safe(p->extra_sample_args));
}

std::string img_gen_params_text(const sd_img_gen_params_t* p) {
    const sd_hires_params_t& h = p->hires;
    return sd::strfmt(
        "prompt: %s\nnegative_prompt: %s\nclip_skip: %d\nwidth: %d\nheight: %d\n"
        "sample_params: %s\nstrength: %.2f\nseed: %" PRId64
        "\nbatch_count: %d\nlora_count: %u\nref_images_count: %d\nref_image_args: %s\n"
        "control_strength: %.2f\nip_adapter_strength: %.2f\nqwen_image_layers: %d\n"
        "circular: x=%s y=%s\n"
        "photo maker: {style_strength = %.2f, id_images_count = %d, id_embed_path = %s}\n"
        "VAE tiling: %s (temporal=%s, extra_tiling_args=%s)\n"
        "hires: {enabled=%s, upscaler=%s, model_path=%s, scale=%.2f, target=%dx%d, steps=%d, "
        "denoising_strength=%.2f}\ncache: %s (threshold=%.3f, start=%.2f, end=%.2f)\n",
        safe(p->prompt), safe(p->negative_prompt), p->clip_skip, p->width, p->height,
        sample_params_text(&p->sample_params).c_str(), p->strength, p->seed, p->batch_count,
        p->lora_count, p->ref_images_count, safe(p->ref_image_args), p->control_strength,
        p->ip_adapter_strength, p->qwen_image_layers, yes_no(p->circular_x), yes_no(p->circular_y),
        p->pm_params.style_strength, p->pm_params.id_images_count, safe(p->pm_params.id_embed_path),
        yes_no(p->vae_tiling_params.enabled), yes_no(p->vae_tiling_params.temporal_tiling),
        safe(p->vae_tiling_params.extra_tiling_args), yes_no(h.enabled),
        field_name(h.upscaler, SD_HIRES_UPSCALER_COUNT, sd_hires_upscaler_name), safe(h.model_path),
        h.scale, h.target_width, h.target_height, h.steps, h.denoising_strength,
        field_name(p->cache.mode, SD_CACHE_SPECTRUM, cache_mode_name), p->cache.reuse_threshold,
        p->cache.start_percent, p->cache.end_percent);
}

template <class F>
char* text_or_null(F&& make) {
    try {
        return to_c_string(make());
    } catch (...) {
        return nullptr;
    }
}

}  // namespace

extern "C" {

void sd_cache_params_init(sd_cache_params_t* c) {
    if (!c) return;
    *c = {};
    c->mode = SD_CACHE_DISABLED;
    c->reuse_threshold = INFINITY;
    c->start_percent = 0.15f;
    c->end_percent = 0.95f;
    c->error_decay_rate = 1.0f;
    c->use_relative_threshold = true;
    c->reset_error_on_compute = true;
    c->Fn_compute_blocks = 8;
    c->Bn_compute_blocks = 0;
    c->residual_diff_threshold = 0.08f;
    c->max_warmup_steps = 8;
    c->max_cached_steps = -1;
    c->max_continuous_cached_steps = -1;
    c->taylorseer_n_derivatives = 1;
    c->taylorseer_skip_interval = 1;
    c->scm_mask = nullptr;
    c->scm_policy_dynamic = true;
    c->spectrum_w = 0.40f;
    c->spectrum_m = 3;
    c->spectrum_lam = 1.0f;
    c->spectrum_window_size = 2;
    c->spectrum_flex_window = 0.50f;
    c->spectrum_warmup_steps = 4;
    c->spectrum_stop_percent = 0.9f;
}

void sd_hires_params_init(sd_hires_params_t* h) {
    if (!h) return;
    *h = {};
    h->enabled = false;
    h->upscaler = SD_HIRES_UPSCALER_LATENT;
    h->model_path = nullptr;
    h->scale = 2.0f;
    h->steps = 0;
    h->denoising_strength = 0.7f;
    h->upscale_tile_size = 128;
}

void sd_ctx_params_init(sd_ctx_params_t* p) {
    if (!p) return;
    *p = {};
    p->n_threads = sd_get_num_physical_cores();
    p->wtype = SD_TYPE_COUNT;
    p->rng_type = CUDA_RNG;
    p->sampler_rng_type = RNG_TYPE_COUNT;
    p->prediction = PREDICTION_COUNT;
    p->lora_apply_mode = LORA_APPLY_AUTO;
    p->vae_format = SD_VAE_FORMAT_AUTO;
    p->max_vram = nullptr;
    p->auto_fit = true;
}

char* sd_ctx_params_to_str(const sd_ctx_params_t* p) {
    if (!p) return nullptr;
    return text_or_null([&] { return ctx_params_text(p); });
}

void sd_sample_params_init(sd_sample_params_t* p) {
    if (!p) return;
    *p = {};
    p->guidance.txt_cfg = 7.0f;
    p->guidance.img_cfg = INFINITY;
    p->guidance.distilled_guidance = 3.5f;
    p->guidance.slg.layer_start = 0.01f;
    p->guidance.slg.layer_end = 0.2f;
    p->guidance.slg.scale = 0.f;
    p->scheduler = SCHEDULER_COUNT;
    p->sample_method = SAMPLE_METHOD_COUNT;
    p->sample_steps = 20;
    p->eta = INFINITY;
    p->flow_shift = INFINITY;
}

char* sd_sample_params_to_str(const sd_sample_params_t* p) {
    if (!p) return nullptr;
    return text_or_null([&] { return sample_params_text(p); });
}

void sd_img_gen_params_init(sd_img_gen_params_t* p) {
    if (!p) return;
    *p = {};
    sd_sample_params_init(&p->sample_params);
    p->clip_skip = -1;
    p->width = 512;
    p->height = 512;
    p->strength = 0.75f;
    p->seed = -1;
    p->batch_count = 1;
    p->ref_image_args = "";
    p->control_strength = 0.9f;
    p->ip_adapter_strength = 1.0f;
    p->qwen_image_layers = 3;
    p->pm_params = {nullptr, 0, nullptr, 20.f};
    p->pulid_params = {nullptr, 1.0f};
    p->vae_tiling_params = default_tiling();
    sd_cache_params_init(&p->cache);
    sd_hires_params_init(&p->hires);
}

char* sd_img_gen_params_to_str(const sd_img_gen_params_t* p) {
    if (!p) return nullptr;
    return text_or_null([&] { return img_gen_params_text(p); });
}

void sd_vid_gen_params_init(sd_vid_gen_params_t* p) {
    if (!p) return;
    *p = {};
    sd_sample_params_init(&p->sample_params);
    sd_sample_params_init(&p->high_noise_sample_params);
    p->high_noise_sample_params.sample_steps = -1;
    p->clip_skip = -1;
    p->width = 512;
    p->height = 512;
    p->strength = 0.75f;
    p->seed = -1;
    p->video_frames = 6;
    p->fps = 16;
    p->moe_boundary = 0.875f;
    p->vace_strength = 1.f;
    p->vae_tiling_params = default_tiling();
    sd_cache_params_init(&p->cache);
    sd_hires_params_init(&p->hires);
}

}  // extern "C"
