// The native schema of /sdcpp/v1/vid_gen (the reference server's api.md): img_gen's shared
// fields plus the clip's own; a job makes one clip, returned as one container file.
#include <string>
#include <vector>

#include "image_payload.h"
#include "request_error.h"
#include "requests.h"

namespace server {
namespace {

using nlohmann::json;

// img_gen's fields that a clip has no use for: refused naming the key, not ignored.
constexpr const char* kImageOnlyKeys[] = {"batch_count",
                                          "ref_images",
                                          "ref_image_args",
                                          "mask_image",
                                          "control_image",
                                          "control_strength",
                                          "ip_adapter_image",
                                          "ip_adapter_strength",
                                          "hires",
                                          "auto_resize_ref_image",
                                          "increase_ref_index",
                                          "embed_image_metadata"};

void refuse_image_only_keys(const FieldReader& f) {
    for (const char* key : kImageOnlyKeys)
        if (f.has(key))
            throw bad_field(f.name(key),
                            "not part of /sdcpp/v1/vid_gen (an img_gen field; a video job makes "
                            "one clip)");
}

void read_video_fields(const FieldReader& f, const ParseContext& ctx, cli::CliParams& p,
                       RequestInputs& in, OutputOptions& out) {
    // The library aligns the count down to 1 + 4k (with a warning) as the reference does.
    if (auto v = f.integer("video_frames", 1, 1024)) p.video_frames = *v;
    if (auto v = f.integer("fps", 1, 240)) p.fps = *v;
    if (auto v = f.number("moe_boundary", 0, 1)) p.moe_boundary = static_cast<float>(*v);
    if (auto v = f.number("vace_strength", 0, 10)) p.vace_strength = static_cast<float>(*v);
    if (auto v = f.string("end_image"))
        in.end_image = decode_image_text(*v, 3, f.name("end_image"));
    // A VACE model's control clip, in order (the library fits each frame to the size).
    if (auto frames = f.strings("control_frames")) {
        for (size_t i = 0; i < frames->size(); ++i)
            in.control_frames.push_back(decode_image_text(
                (*frames)[i], 3, f.name("control_frames") + "[" + std::to_string(i) + "]"));
    }
    if (auto s = f.object("high_noise_sample_params"))
        read_native_sample_params(*s, ctx.limits, p.high_noise_sample_params,
                                  p.high_noise_skip_layers, nullptr, -1);
    if (auto v = f.string("output_format")) {
        auto format = video_format_from_name(*v);
        if (!format)
            throw bad_field(
                f.name("output_format"),
                "a video is webm, webp (animated) or avi (MJPEG), not '" + v->substr(0, 40) + "'");
        out.video_format = *format;
    }
}

}  // namespace

JobSpec parse_native_video_request(const json& body, const ParseContext& ctx) {
    const FieldReader fields(body);
    refuse_image_only_keys(fields);
    cli::CliParams p = ctx.defaults;
    p.mode = cli::Mode::VidGen;
    p.batch_count = 1;
    RequestInputs inputs;
    OutputOptions output;
    apply_shared_native_fields(fields, ctx, p, inputs, output);
    read_video_fields(fields, ctx, p, inputs, output);
    return finalize_request(std::move(p), std::move(inputs), output, ctx);
}

}  // namespace server
