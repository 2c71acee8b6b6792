#include "job_spec.h"

#include <optional>

#include "base/error.h"
#include "cli_options.h"
#include "image/image_resize.h"
#include "request_common.h"
#include "request_error.h"

namespace server {
namespace {

using sd::image::Image;

Image solid_mask(int width, int height) {
    Image mask;
    mask.width = static_cast<uint32_t>(width);
    mask.height = static_cast<uint32_t>(height);
    mask.channels = 1;
    mask.pixels.assign(static_cast<size_t>(width) * static_cast<size_t>(height), 255);
    return mask;
}

Image fitted(const Image& image, int width, int height) {
    return sd::image::fit(image, static_cast<uint32_t>(width), static_cast<uint32_t>(height));
}

void check_side(int value, const std::string& field, const char* what, const ServerLimits& l) {
    if (value < l.min_side || value > l.max_side)
        throw bad_field(field, std::string(what) + " " + std::to_string(value) + " is outside " +
                                   std::to_string(l.min_side) + ".." + std::to_string(l.max_side));
    if (value % 8 != 0)
        throw bad_field(field, std::string(what) + " " + std::to_string(value) +
                                   " is not a multiple of 8; give width and height");
}

}  // namespace

JobSpec finalize_request(cli::CliParams p, RequestInputs in, const OutputOptions& output,
                         const ParseContext& ctx) {
    const ServerLimits& limits = ctx.limits;
    // A LoRA for another family is the request's fault (400), found before it is queued.
    auto check_fit = [&ctx](const std::string& path, const std::string& field) {
        if (!ctx.check_lora) return;
        try {
            ctx.check_lora(path);
        } catch (const sd::Error& e) {
            throw bad_field(field, e.what());
        }
    };
    for (const cli::LoraEntry& lora : in.loras) check_fit(lora.path, "lora");
    // <lora:NAME:WEIGHT> tags of the prompt (the webui's way) name files of the LoRA folder,
    // as the structured fields do; prompt files and embeddings belong to the command line.
    for (const cli::PromptLora& tag : cli::take_lora_tags(p.prompt)) {
        in.loras.push_back({resolve_lora_path(p.lora_model_dir, tag.name, "prompt"), tag.multiplier,
                            tag.high_noise});
        check_fit(in.loras.back().path, "prompt");
    }
    p.lora_model_dir.clear();
    p.prompt_file.clear();
    p.negative_prompt_file.clear();
    p.embedding_dir.clear();
    JobSpec spec;
    try {
        spec.request = cli::resolve_request(p);
    } catch (const cli::UsageError& e) {
        throw bad_field(p.hires ? "hires.upscaler" : "request", e.what());
    }
    cli::GenerationRequest& r = spec.request;
    if (!in.init_image.empty() && p.width <= 0 && p.height <= 0) {
        r.width = static_cast<int>(in.init_image.width);
        r.height = static_cast<int>(in.init_image.height);
        check_side(r.width, in.init_image_field, "the image width", limits);
        check_side(r.height, in.init_image_field, "the image height", limits);
    }
    check_side(r.width, "width", "width", limits);
    check_side(r.height, "height", "height", limits);
    if (!in.init_image.empty()) r.init_image = fitted(in.init_image, r.width, r.height);
    if (in.mask_image.empty()) {
        r.mask_image = solid_mask(r.width, r.height);
    } else {
        r.mask_image = fitted(in.mask_image, r.width, r.height);
        if (in.invert_mask)
            for (uint8_t& v : r.mask_image.pixels) v = static_cast<uint8_t>(255 - v);
    }
    if (!in.control_image.empty()) r.control_image = fitted(in.control_image, r.width, r.height);
    r.ref_images = std::move(in.ref_images);
    r.loras = std::move(in.loras);
    spec.params = std::move(p);
    spec.output = output;
    return spec;
}

std::optional<sd::image::Format> output_format_from_name(const std::string& name) {
    if (name == "png") return sd::image::Format::Png;
    if (name == "jpeg" || name == "jpg") return sd::image::Format::Jpeg;
    if (name == "webp") return sd::image::Format::Webp;
    return std::nullopt;
}

const char* output_format_name(sd::image::Format format) {
    switch (format) {
        case sd::image::Format::Jpeg:
            return "jpeg";
        case sd::image::Format::Webp:
            return "webp";
        default:
            return "png";
    }
}

const char* output_mime_type(sd::image::Format format) {
    switch (format) {
        case sd::image::Format::Jpeg:
            return "image/jpeg";
        case sd::image::Format::Webp:
            return "image/webp";
        default:
            return "image/png";
    }
}

}  // namespace server
