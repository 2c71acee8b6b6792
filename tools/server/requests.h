// The request parsers of the three API families. Each starts from the command line's
// options (ParseContext::defaults), applies the request's fields, checks every one (a
// RequestError names the field at fault) and settles the result into a JobSpec.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job_spec.h"
#include "json_fields.h"

namespace server {

// --- native schema (/sdcpp/v1/img_gen, and <sd_cpp_extra_args> in the other APIs) ---

// What img_gen and vid_gen share: prompt, negative_prompt, clip_skip, width, height, strength,
// seed, init_image, sample_params, lora, vae_tiling_params, the cache fields and
// output_compression.
void apply_shared_native_fields(const FieldReader& fields, const ParseContext& ctx,
                                cli::CliParams& p, RequestInputs& inputs, OutputOptions& output);
// A sample_params object (or vid_gen's high_noise_sample_params) into `out`: sampler and
// scheduler by name, steps from `min_steps` (-1: the high-noise stage's automatic count),
// guidance and its skip layers; custom_sigmas only where `custom_sigmas` is given.
void read_native_sample_params(const FieldReader& s, const ServerLimits& limits,
                               sd_sample_params_t& out, std::vector<int>& skip_layers,
                               std::vector<float>* custom_sigmas, int min_steps);
void apply_native_fields(const FieldReader& fields, const ParseContext& ctx, cli::CliParams& p,
                         RequestInputs& inputs, OutputOptions& output);
JobSpec parse_native_request(const nlohmann::json& body, const ParseContext& ctx);
// /sdcpp/v1/vid_gen: one clip (no batch, no image-only inputs; each such key is refused
// naming it), video_frames, fps, moe_boundary, vace_strength, end_image, control_frames,
// high_noise_sample_params and the container (output_format webm by default, webp or avi).
JobSpec parse_native_video_request(const nlohmann::json& body, const ParseContext& ctx);
// Takes a <sd_cpp_extra_args> block out of `prompt` (read from `field`) and applies it.
void apply_extra_args(std::string& prompt, const std::string& field, const ParseContext& ctx,
                      cli::CliParams& p, RequestInputs& inputs, OutputOptions& output);

// --- OpenAI images API ---

JobSpec parse_openai_generation(const nlohmann::json& body, const ParseContext& ctx);

// One part of a multipart/form-data body.
struct FormPart {
    std::string name;
    std::string content;
    std::string filename;
    std::string content_type;
};
JobSpec parse_openai_edit(const std::vector<FormPart>& form, const ParseContext& ctx);

// --- AUTOMATIC1111 webui API ---

struct SdapiRequest {
    JobSpec spec;
    nlohmann::json parameters;  // the request as the response echoes it
    bool send_images = true;
    bool img2img = false;
};
SdapiRequest parse_sdapi_request(const nlohmann::json& body, bool img2img, const ParseContext& ctx);

}  // namespace server
