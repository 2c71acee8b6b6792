// /sdcpp/v1/vid_gen's parser: the clip's fields onto the command line's defaults, the
// container, and a RequestError naming each field a clip cannot take.
#include <gtest/gtest.h>

#include "request_error.h"
#include "request_test_util.h"
#include "requests.h"

namespace server {
namespace {

using nlohmann::json;

using test::png_b64;

cli::CliParams wan_defaults() {
    return test::defaults_from({"--diffusion-model", "wan.safetensors", "--steps", "12",
                                "--cfg-scale", "5", "--video-frames", "17", "--fps", "16"});
}

void expect_field_error(const json& body, const ParseContext& ctx, const std::string& field,
                        const std::string& words) {
    SCOPED_TRACE(body.dump());
    test::expect_request_error([&] { parse_native_video_request(body, ctx); }, field, words);
}

class NativeVideoRequest : public testing::Test {
  protected:
    cli::CliParams defaults = wan_defaults();
    ParseContext ctx{defaults, ServerLimits{}};
};

TEST_F(NativeVideoRequest, AClipKeepsTheCommandLineDefaultsAndIsAWebm) {
    const JobSpec spec = parse_native_video_request(json{{"prompt", "a cat"}}, ctx);
    EXPECT_TRUE(spec.video());
    EXPECT_EQ(spec.request.prompt, "a cat");
    EXPECT_EQ(spec.params.video_frames, 17);
    EXPECT_EQ(spec.params.fps, 16);
    EXPECT_EQ(spec.params.batch_count, 1);
    EXPECT_EQ(spec.params.sample_params.sample_steps, 12);
    EXPECT_FLOAT_EQ(spec.params.sample_params.guidance.txt_cfg, 5.f);
    EXPECT_EQ(spec.params.high_noise_sample_params.sample_steps, -1);  // automatic
    EXPECT_EQ(spec.output.video_format, sd::image::VideoFormat::WebmVp8);
    EXPECT_FALSE(parse_native_request(json{{"prompt", "a cat"}}, ctx).video());
}

TEST_F(NativeVideoRequest, TheClipsFieldsMapToTheRequest) {
    const json body = {
        {"prompt", "a dog"},
        {"negative_prompt", "blur"},
        {"width", 320},
        {"height", 192},
        {"seed", 77},
        {"video_frames", 9},
        {"fps", 12},
        {"moe_boundary", 0.9},
        {"init_image", png_b64(40, 24)},
        {"end_image", png_b64(40, 24)},
        {"control_frames", json::array({png_b64(40, 24), png_b64(16, 16)})},
        {"vace_strength", 0.6},
        {"sample_params",
         {{"sample_method", "euler"}, {"sample_steps", 6}, {"guidance", {{"txt_cfg", 4.5}}}}},
        {"high_noise_sample_params",
         {{"sample_method", "heun"},
          {"sample_steps", 3},
          {"flow_shift", 8},
          {"guidance", {{"txt_cfg", 3.5}, {"slg", {{"layers", {4, 5}}}}}}}},
        {"vae_tiling_params", {{"enabled", true}, {"tile_size_x", 16}, {"tile_size_y", 16}}},
        {"output_format", "avi"},
        {"output_compression", 70}};
    const JobSpec spec = parse_native_video_request(body, ctx);
    const cli::CliParams& p = spec.params;
    EXPECT_EQ(spec.request.negative_prompt, "blur");
    EXPECT_EQ(spec.request.width, 320);
    EXPECT_EQ(spec.request.height, 192);
    EXPECT_EQ(spec.request.seed, 77);
    EXPECT_EQ(p.video_frames, 9);
    EXPECT_EQ(p.fps, 12);
    EXPECT_FLOAT_EQ(p.moe_boundary, 0.9f);
    EXPECT_EQ(spec.request.init_image.width, 40u);
    EXPECT_EQ(spec.request.end_image.width, 40u);
    EXPECT_EQ(spec.request.end_image.height, 24u);
    ASSERT_EQ(spec.request.control_frames.size(), 2u);
    EXPECT_EQ(spec.request.control_frames[1].width, 16u);
    EXPECT_FLOAT_EQ(p.vace_strength, 0.6f);
    EXPECT_EQ(p.sample_params.sample_method, EULER_SAMPLE_METHOD);
    EXPECT_EQ(p.sample_params.sample_steps, 6);
    EXPECT_FLOAT_EQ(p.sample_params.guidance.txt_cfg, 4.5f);
    EXPECT_EQ(p.high_noise_sample_params.sample_method, HEUN_SAMPLE_METHOD);
    EXPECT_EQ(p.high_noise_sample_params.sample_steps, 3);
    EXPECT_FLOAT_EQ(p.high_noise_sample_params.flow_shift, 8.f);
    EXPECT_FLOAT_EQ(p.high_noise_sample_params.guidance.txt_cfg, 3.5f);
    EXPECT_EQ(p.high_noise_skip_layers, (std::vector<int>{4, 5}));
    EXPECT_EQ(p.skip_layers, (std::vector<int>{7, 8, 9}));  // the main stage's untouched
    EXPECT_TRUE(p.vae_tiling_params.enabled);
    EXPECT_EQ(p.vae_tiling_params.tile_size_x, 16);
    EXPECT_EQ(spec.output.video_format, sd::image::VideoFormat::MjpegAvi);
    EXPECT_EQ(spec.output.compression, 70);
    EXPECT_EQ(parse_native_video_request(json{{"output_format", "webp"}}, ctx).output.video_format,
              sd::image::VideoFormat::AnimatedWebp);
}

TEST_F(NativeVideoRequest, ContainersHaveTheReferencesNamesAndTypes) {
    using sd::image::VideoFormat;
    EXPECT_STREQ(video_format_name(VideoFormat::WebmVp8), "webm");
    EXPECT_STREQ(video_mime_type(VideoFormat::WebmVp8), "video/webm");
    EXPECT_STREQ(video_format_name(VideoFormat::AnimatedWebp), "webp");
    EXPECT_STREQ(video_mime_type(VideoFormat::AnimatedWebp), "image/webp");
    EXPECT_STREQ(video_format_name(VideoFormat::MjpegAvi), "avi");
    EXPECT_STREQ(video_mime_type(VideoFormat::MjpegAvi), "video/x-msvideo");
    for (const char* name : {"webm", "webp", "avi"})
        EXPECT_STREQ(video_format_name(*video_format_from_name(name)), name);
    EXPECT_FALSE(video_format_from_name("mp4").has_value());
}

TEST_F(NativeVideoRequest, WhatAClipCannotTakeIsNamed) {
    expect_field_error({{"batch_count", 2}}, ctx, "batch_count", "not part of /sdcpp/v1/vid_gen");
    expect_field_error({{"ref_images", json::array({png_b64(8, 8)})}}, ctx, "ref_images",
                       "not part of /sdcpp/v1/vid_gen");
    expect_field_error({{"hires", {{"enabled", true}}}}, ctx, "hires", "an img_gen field");
    expect_field_error({{"mask_image", png_b64(8, 8)}}, ctx, "mask_image", "img_gen");
    expect_field_error({{"output_format", "png"}}, ctx, "output_format", "webm, webp");
    expect_field_error({{"control_frames", json::array({png_b64(8, 8), "nope"})}}, ctx,
                       "control_frames[1]", "control_frames[1]");
    expect_field_error({{"video_frames", 0}}, ctx, "video_frames", "video_frames");
    expect_field_error({{"fps", 0}}, ctx, "fps", "fps");
    expect_field_error({{"moe_boundary", 1.5}}, ctx, "moe_boundary", "moe_boundary");
    expect_field_error({{"end_image", "not base64!"}}, ctx, "end_image", "end_image");
    expect_field_error({{"high_noise_sample_params", {{"custom_sigmas", {1.0, 0.0}}}}}, ctx,
                       "high_noise_sample_params.custom_sigmas", "sample_params' alone");
    expect_field_error({{"high_noise_sample_params", {{"sample_method", "nope"}}}}, ctx,
                       "high_noise_sample_params.sample_method", "unknown sampler");
    expect_field_error({{"sample_params", {{"sample_steps", 0}}}}, ctx,
                       "sample_params.sample_steps", "sample_steps");
}

}  // namespace
}  // namespace server
