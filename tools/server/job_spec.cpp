#include "job_spec.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli_options.h"
#include "request_common.h"
#include "request_error.h"

namespace server {
namespace {

using sd::image::Image;

void check_side(int value, const std::string& field, const char* what, const ServerLimits& l) {
    if (value < l.min_side || value > l.max_side)
        throw bad_field(field, std::string(what) + " " + std::to_string(value) + " is outside " +
                                   std::to_string(l.min_side) + ".." + std::to_string(l.max_side));
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
    for (const auto& [text, field] :
         {std::pair{&p.prompt, "prompt"}, std::pair{&p.negative_prompt, "negative_prompt"}}) {
        try {
            cli::check_prompt_text(*text, field, p.max_prompt_tokens);
        } catch (const cli::UsageError& e) {
            throw bad_field(field, e.what());
        }
    }
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
    // A mask selects what to repaint of an init image; alone it would do nothing.
    if (!in.mask_image.empty() && in.init_image.empty())
        throw bad_field("mask_image", "a mask needs an init image to repaint (init_image)");
    // Images of another size are fitted to the (aligned) size by the library; no mask
    // repaints everything.
    r.init_image = std::move(in.init_image);
    r.end_image = std::move(in.end_image);
    r.control_frames = std::move(in.control_frames);
    r.mask_image = std::move(in.mask_image);
    if (in.invert_mask)
        for (uint8_t& v : r.mask_image.pixels) v = static_cast<uint8_t>(255 - v);
    r.control_image = std::move(in.control_image);
    r.ref_images = std::move(in.ref_images);
    r.loras = std::move(in.loras);
    spec.params = std::move(p);
    spec.output = output;
    return spec;
}

std::string settled_text(const JobSpec& spec) {
    const sd_sample_params_t& s = spec.params.sample_params;
    nlohmann::json out = {{"seed", spec.request.seed},
                          {"width", spec.request.width},
                          {"height", spec.request.height},
                          {"steps", s.sample_steps}};
    if (s.sample_method != SAMPLE_METHOD_COUNT)
        out["method"] = sd_sample_method_name(s.sample_method);
    if (s.scheduler != SCHEDULER_COUNT) out["scheduler"] = sd_scheduler_name(s.scheduler);
    return out.dump();
}

void apply_settled(JobSpec& spec, const std::string& text) try {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return;
    cli::GenerationRequest& r = spec.request;
    sd_sample_params_t& s = spec.params.sample_params;
    r.seed = j.value("seed", r.seed);
    r.width = j.value("width", r.width);
    r.height = j.value("height", r.height);
    s.sample_steps = j.value("steps", s.sample_steps);
    const sample_method_t method = str_to_sample_method(j.value("method", "").c_str());
    const scheduler_t scheduler = str_to_scheduler(j.value("scheduler", "").c_str());
    if (method != SAMPLE_METHOD_COUNT) s.sample_method = method;
    if (scheduler != SCHEDULER_COUNT) s.scheduler = scheduler;
} catch (const nlohmann::json::exception&) {
    // a field of another type: what was applied before it stays
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

std::optional<sd::image::VideoFormat> video_format_from_name(const std::string& name) {
    using sd::image::VideoFormat;
    if (name == "webm") return VideoFormat::WebmVp8;
    if (name == "webp") return VideoFormat::AnimatedWebp;
    if (name == "avi") return VideoFormat::MjpegAvi;
    return std::nullopt;
}

const char* video_format_name(sd::image::VideoFormat format) {
    switch (format) {
        case sd::image::VideoFormat::AnimatedWebp:
            return "webp";
        case sd::image::VideoFormat::MjpegAvi:
            return "avi";
        default:
            return "webm";
    }
}

const char* video_mime_type(sd::image::VideoFormat format) {
    switch (format) {
        case sd::image::VideoFormat::AnimatedWebp:
            return "image/webp";
        case sd::image::VideoFormat::MjpegAvi:
            return "video/x-msvideo";
        default:
            return "video/webm";
    }
}

}  // namespace server
