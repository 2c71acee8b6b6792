// Everything the command line can set, with the reference program's defaults. The option
// table (cli_options.cpp) writes into this; the modes read it.
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "stable-diffusion-ext.h"
#include "stable-diffusion.h"

namespace cli {

enum class Mode { ImgGen, VidGen, Convert, Upscale, Metadata };

const char* mode_name(Mode mode);

struct CliParams {
    CliParams();

    // Program options.
    Mode mode = Mode::ImgGen;
    std::string output_path = "output.png";
    int output_begin_idx = -1;  // -1: 0 (the reference's default)
    std::string preview_path = "preview.png";
    int preview_interval = 1;
    preview_t preview_method = PREVIEW_NONE;
    bool canny = false;
    bool convert_name = false;
    bool verbose = false;
    bool color = false;
    bool taesd_preview_only = false;
    bool preview_noisy = false;
    std::string image_path;  // -M metadata --image
    std::string metadata_format = "text";
    bool metadata_raw = false;
    bool metadata_brief = false;
    bool metadata_all = false;
    std::string tokenizer_dir;  // reaches the library typed (sd_ctx_ext_params_t)
    std::string rpc_servers;
    std::vector<std::string> imat_in;  // every --imat-in, in order
    std::string imat_out;
    bool help = false;
    bool list_devices = false;
    bool list_families = false;

    // Model files and context.
    int n_threads = -1;
    int max_prompt_tokens = SD_DEFAULT_MAX_PROMPT_TOKENS;  // <= 0: no limit
    std::string model_path;
    std::string clip_l_path;
    std::string clip_g_path;
    std::string clip_vision_path;
    std::string t5xxl_path;
    std::string llm_path;
    std::string llm_vision_path;
    std::string diffusion_model_path;
    std::string high_noise_diffusion_model_path;
    std::string uncond_diffusion_model_path;
    std::string embeddings_connectors_path;
    std::string vae_path;
    std::string audio_vae_path;
    std::string taesd_path;
    std::string control_net_path;
    std::string embedding_dir;
    std::string lora_model_dir = ".";
    std::string hires_upscalers_dir;
    std::string tensor_type_rules;
    std::string photo_maker_path;
    std::string esrgan_path;
    std::string ip_adapter_path;
    std::string motion_module_path;
    std::string pulid_weights_path;
    std::string model_args;
    sd_type_t wtype = SD_TYPE_COUNT;
    rng_type_t rng_type = CUDA_RNG;
    rng_type_t sampler_rng_type = RNG_TYPE_COUNT;
    prediction_t prediction = PREDICTION_COUNT;
    lora_apply_mode_t lora_apply_mode = LORA_APPLY_AUTO;
    sd_vae_format_t vae_format = SD_VAE_FORMAT_AUTO;
    bool offload_to_cpu = false;
    bool enable_mmap = false;
    bool control_net_cpu = false;
    bool clip_on_cpu = false;
    bool vae_on_cpu = false;
    bool flash_attn = false;
    bool diffusion_flash_attn = false;
    bool diffusion_conv_direct = false;
    bool vae_conv_direct = false;
    bool circular = false;
    bool circular_x = false;
    bool circular_y = false;
    bool force_sdxl_vae_conv_scale = false;
    bool stream_layers = false;
    bool auto_fit = false;
    bool eager_load = false;
    std::string max_vram;  // GiB, "3.2", "-1" or "DEVICE=GiB,..." (as the reference)
    std::string backend;
    std::string params_backend;
    std::string split_mode;
    // Unset: model_args' compute_type, else auto. Reaches the library typed (sd_ctx_ext_params_t).
    sd_compute_type_t compute_type = SD_COMPUTE_TYPE_COUNT;

    // Generation.
    std::string prompt;
    std::string negative_prompt;
    std::string prompt_file;
    std::string negative_prompt_file;
    std::string init_image_path;
    std::string end_image_path;
    std::string mask_image_path;
    std::string control_image_path;
    std::string control_video_path;
    std::string pm_id_images_dir;
    std::string pm_id_embed_path;
    std::vector<std::string> ref_image_paths;
    std::string ref_image_args;
    std::vector<std::string> ref_video_paths;
    std::vector<std::string> ref_audio_paths;
    std::vector<std::string> ref_video_audio_paths;
    int width = -1;  // -1: from the init image, else 512
    int height = -1;
    int clip_skip = -1;
    int batch_count = 1;
    int video_frames = 1;
    int fps = 16;
    int upscale_repeats = 1;
    int upscale_tile_size = 128;
    int64_t seed = 42;
    float strength = 0.75f;
    float control_strength = 0.9f;
    float pm_style_strength = 20.f;
    float moe_boundary = 0.875f;
    float vace_strength = 1.f;
    bool increase_ref_index = false;
    bool auto_resize_ref_image = true;
    bool embed_image_metadata = true;
    sd_sample_params_t sample_params;
    sd_sample_params_t high_noise_sample_params;
    std::string extra_sample_args;
    std::vector<int> skip_layers = {7, 8, 9};
    std::vector<int> high_noise_skip_layers = {7, 8, 9};
    std::vector<float> custom_sigmas;
    sd_tiling_params_t vae_tiling_params = {false, false, 0, 0, 0.5f, 0.0f, 0.0f, nullptr};
    std::string extra_tiling_args;
    std::string cache_mode;
    std::string cache_option;
    std::string scm_mask;
    bool scm_policy_dynamic = true;
    bool hires = false;
    std::string hires_upscaler = "Latent";
    float hires_scale = 2.f;
    int hires_width = 0;
    int hires_height = 0;
    int hires_steps = 0;
    float hires_denoising_strength = 0.7f;
    int hires_upscale_tile_size = 128;
    std::vector<float> hires_custom_sigmas;
    std::string ip_adapter_image;
    float ip_adapter_strength = 1.f;
    std::string pulid_id_embedding;
    float pulid_id_weight = 1.f;
    int qwen_image_layers = 3;
    std::string ad_model;
    std::string ad_prompt;
    std::string ad_negative_prompt;
    std::string extra_ad_args;

    // Long names of the options given on the command line.
    std::set<std::string> given;
    bool was_given(const std::string& long_name) const { return given.count(long_name) > 0; }
};

}  // namespace cli
