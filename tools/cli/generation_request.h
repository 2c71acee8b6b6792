// From the command line to the C API's structs, as the reference program builds them:
// prompt files, <lora:NAME:WEIGHT> tags, the embeddings folder, cache and hires settings,
// and the input images (input_images.h) they point to. Defaults the model decides (seed,
// size on the model's grid, sampler, scheduler, steps) are settled by the library
// (sd_settle_img_gen_params) and copied back for the reports (report_settled).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli_params.h"
#include "image/image_io.h"
#include "stable-diffusion-ext.h"

namespace cli {

struct LoraEntry {
    std::string path;
    float multiplier = 1.f;
    bool high_noise = false;
};

struct GenerationRequest {
    std::string prompt;            // with the <lora:...> tags taken out
    std::string prompt_with_lora;  // as given (for the image metadata)
    std::string negative_prompt;
    std::vector<LoraEntry> loras;
    std::map<std::string, std::string> embeddings;  // name -> file
    int64_t seed = 42;  // as given (< 0: random) until report_settled sets the settled one
    int width = 512;
    int height = 512;
    sd_cache_params_t cache{};
    sd_hires_upscaler_t hires_upscaler = SD_HIRES_UPSCALER_LATENT;
    std::string hires_model_path;

    sd::image::Image init_image;
    sd::image::Image end_image;
    sd::image::Image mask_image;
    sd::image::Image control_image;
    std::vector<sd::image::Image> ref_images;
    std::vector<sd::image::Image> control_frames;
    std::vector<sd::image::Image> pm_id_images;

    // What the C structs point into; filled by the make_* calls.
    std::vector<sd_lora_t> lora_views;
    std::vector<sd_embedding_t> embedding_views;
    std::vector<sd_image_t> ref_views;
    std::vector<sd_image_t> frame_views;
    std::vector<sd_image_t> pm_views;
    std::vector<int> skip_layers;
    std::vector<int> high_noise_skip_layers;
    std::vector<float> custom_sigmas;
    std::vector<float> hires_sigmas;
    std::string backend, params_backend;  // the placement strings sent
    std::string ref_image_args;
};

// A <lora:NAME:WEIGHT> tag of a prompt ("|high_noise|NAME": for a video model's second stage).
struct PromptLora {
    std::string name;
    float multiplier = 1.0f;
    bool high_noise = false;
};

// Removes every <lora:NAME:WEIGHT> tag from `prompt` and returns them in order (a tag whose
// weight is no number is removed with a warning).
std::vector<PromptLora> take_lora_tags(std::string& prompt);

// The library's check of a prompt before it is tokenized (sd_check_prompt_text: no NUL byte,
// at most SD_MAX_PROMPT_BYTES_PER_TOKEN bytes a token), so that megabytes are refused before
// the model loads. A UsageError naming `what`.
void check_prompt_text(const std::string& text, const char* what, int max_tokens);

// Everything but the images. Throws UsageError (unreadable prompt file, bad --cache-option,
// unknown --hires-upscaler, a prompt check_prompt_text refuses, ...).
GenerationRequest resolve_request(const CliParams& params);

// --cache-mode / --cache-option / --scm-* as the reference program reads them.
sd_cache_params_t make_cache_params(const CliParams& params);

// The structs for new_sd_ctx_ext / generate_image / generate_video. They point into `params`
// and `request`, which must outlive them and not move.
sd_ctx_params_t make_ctx_params(const CliParams& params, GenerationRequest& request);
// --tokenizer-dir, --compute-type and --max-prompt-tokens, typed (no model_args item).
sd_ctx_ext_params_t make_ctx_ext_params(const CliParams& params);
sd_img_gen_params_t make_img_gen_params(const CliParams& params, GenerationRequest& request);
sd_vid_gen_params_t make_vid_gen_params(const CliParams& params, GenerationRequest& request);

// The reference's placement strings from our flags: --backend plus te=cpu (--clip-on-cpu),
// vae=cpu (--vae-on-cpu) and controlnet=cpu (--control-net-cpu); --params-backend, or *=cpu
// for --offload-to-cpu. --model-args goes as given.
std::string backend_spec(const CliParams& params);
std::string params_backend_spec(const CliParams& params);
// --ref-image-args plus ref_index_mode=increase / resize_before_vae=false for
// --increase-ref-index / --disable-auto-resize-ref-image (after it, so that the flags win).
std::string ref_image_args_spec(const CliParams& params);

// A C view of an image (empty -> no pixels, `channels` channels).
sd_image_t image_view(sd::image::Image& image, uint32_t channels = 3);

// What the library settled (sd_settle_img_gen_params / sd_settle_vid_gen_params) into the
// values the images' parameters, names and the server's replies report: seed, size, sample
// method, scheduler, steps, flow shift, the hires target size.
void report_settled(const sd_img_gen_params_t& settled, CliParams& params,
                    GenerationRequest& request);
void report_settled(const sd_vid_gen_params_t& settled, CliParams& params,
                    GenerationRequest& request);

}  // namespace cli
