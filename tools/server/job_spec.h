// One generation as the worker runs it (JobSpec), what a parsed request carries besides
// sd-cli's options (RequestInputs, OutputOptions), and the step that turns a parsed request
// into a JobSpec: the size (from the init image when none is given) within the limits, the
// input images, the mask, the prompts' length (the library's byte check). The seed, the size
// on the model's grid, the sampler, scheduler and steps are settled by the library when the
// job runs (ModelRunner: sd_settle_img_gen_params), which writes them into the JobSpec.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli_params.h"
#include "generation_request.h"
#include "image/image_io.h"
#include "image/video_writer.h"
#include "request_source.h"
#include "server_config.h"

namespace server {

struct OutputOptions {
    sd::image::Format format = sd::image::Format::Png;
    sd::image::VideoFormat video_format = sd::image::VideoFormat::WebmVp8;  // a vid_gen job's
    int compression = 100;  // 0..100: quality of JPEG, WebP and the video's frames
    bool embed_metadata = true;
};

struct RequestInputs {
    sd::image::Image init_image;
    std::string init_image_field;                  // for messages about its size
    sd::image::Image end_image;                    // a video's last frame (FLF2V)
    std::vector<sd::image::Image> control_frames;  // a video's control clip (VACE)
    sd::image::Image mask_image;                   // grey
    bool invert_mask = false;
    sd::image::Image control_image;
    std::vector<sd::image::Image> ref_images;
    std::vector<cli::LoraEntry> loras;
};

// Throws sd::Error (the reason) when the LoRA file at a path does not fit the loaded model.
using LoraCheck = std::function<void(const std::string& path)>;

// What the request parsers start from: the command line's options, the limits and the check
// of each LoRA against the model (none: not checked, as in the parsers' unit tests).
struct ParseContext {
    const cli::CliParams& defaults;
    ServerLimits limits;
    LoraCheck check_lora = nullptr;
    // The model takes reference images: the edit route passes its images as references too,
    // as the reference server does (unknown, as on an API node without the model: false).
    bool ref_images = false;
};

struct JobSpec {
    cli::CliParams params;           // the defaults with the request applied
    cli::GenerationRequest request;  // prompt, seed, size and images (settled when it ran)
    OutputOptions output;
    RequestSource source;  // the request as received (what the Redis queue sends a worker)

    // A vid_gen job: one clip, returned as one container file.
    bool video() const { return params.mode == cli::Mode::VidGen; }
};

// Throws RequestError (an init image whose size breaks the limits, an unknown hires
// upscaler, a LoRA that fits none of the model's weights, ...).
JobSpec finalize_request(cli::CliParams params, RequestInputs inputs, const OutputOptions& output,
                         const ParseContext& ctx);

// What the library settled for a job, as a worker tells the API node (the Redis queue's
// "settled" field): JSON of the seed, size, sample method, scheduler and steps; and back into
// the API node's copy of the JobSpec (an empty or unreadable text changes nothing).
std::string settled_text(const JobSpec& spec);
void apply_settled(JobSpec& spec, const std::string& text);

// "png", "jpeg" (or "jpg"), "webp"; std::nullopt otherwise.
std::optional<sd::image::Format> output_format_from_name(const std::string& name);
// "png", "jpeg", "webp".
const char* output_format_name(sd::image::Format format);
const char* output_mime_type(sd::image::Format format);
// A vid_gen job's container: "webm", "webp" (animated) or "avi" (MJPEG); std::nullopt
// otherwise.
std::optional<sd::image::VideoFormat> video_format_from_name(const std::string& name);
const char* video_format_name(sd::image::VideoFormat format);
const char* video_mime_type(sd::image::VideoFormat format);

}  // namespace server
