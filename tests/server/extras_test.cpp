// /sdapi/v1/extra-single-image: the image upscaled by the named model (or --upscale-model)
// and resized to the requested factor or size; a 4xx naming the field for a bad image, an
// unknown upscaler or a model file that is not an upscaler, after which requests still work.
#include "extras.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/base64.h"
#include "cli_options.h"
#include "esrgan_files.h"
#include "request_error.h"
#include "request_test_util.h"

namespace server {
namespace {

using nlohmann::json;

class IdleRunner : public JobRunner {
  public:
    RunOutcome run(JobSpec&, const RunHooks&) override { return {}; }
    void interrupt() override {}
};

std::string png_b64(uint32_t w, uint32_t h) {
    return test::png_b64(w, h, 90);
}

sd::image::Image decode(const json& reply) {
    const std::string text = reply.at("image").get<std::string>();
    const std::optional<std::vector<uint8_t>> bytes = sd::base64_decode(text);
    EXPECT_TRUE(bytes.has_value());
    if (!bytes) return {};
    return sd::image::decode_image(bytes->data(), bytes->size(), 3, "reply");
}

std::string field_of(const ServerState& state, const json& body) {
    try {
        extra_single_image(state, body);
    } catch (const RequestError& e) {
        EXPECT_GE(e.status(), 400);
        EXPECT_LT(e.status(), 500);
        return e.field();
    }
    return "(accepted)";
}

TEST(ExtraSingleImage, UpscalesResizesAndRefusesBadInput) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(testing::TempDir()) / "extras_upscalers";
    fs::create_directories(dir);
    sd::test::TinyEsrgan t;
    t.upsamples = 1;  // 2x
    sd::test::write_tiny_esrgan((dir / "tiny_x2.safetensors").string(), t, 9);
    std::ofstream((dir / "broken.pth").string()) << "not a model";

    cli::CliParams defaults;
    defaults.hires_upscalers_dir = dir.string();
    IdleRunner runner;
    JobQueue queue(runner, {4, 60});
    const ServerState state(ServerConfig{}, defaults, queue);

    json reply = extra_single_image(
        state, {{"image", png_b64(12, 8)}, {"upscaler_1", "tiny_x2"}, {"upscaling_resize", 2}});
    EXPECT_EQ(reply.at("html_info"), "");
    sd::image::Image out = decode(reply);
    EXPECT_EQ(out.width, 24u);
    EXPECT_EQ(out.height, 16u);
    out = decode(extra_single_image(state, {{"image", png_b64(12, 8)},
                                            {"upscaler_1", "tiny_x2"},
                                            {"resize_mode", 1},
                                            {"upscaling_resize_w", 30},
                                            {"upscaling_resize_h", 10}}));
    EXPECT_EQ(out.width, 30u);
    EXPECT_EQ(out.height, 10u);

    EXPECT_EQ(field_of(state, {{"upscaler_1", "tiny_x2"}}), "image");
    EXPECT_EQ(field_of(state, {{"image", "bm90IGFuIGltYWdl"}, {"upscaler_1", "tiny_x2"}}), "image");
    EXPECT_EQ(field_of(state, {{"image", png_b64(4, 4)}, {"upscaler_1", "nope"}}), "upscaler_1");
    EXPECT_EQ(field_of(state, {{"image", png_b64(4, 4)}}), "upscaler_1");  // no --upscale-model
    EXPECT_EQ(field_of(state, {{"image", png_b64(4, 4)}, {"upscaler_1", "broken"}}), "upscaler_1");
    EXPECT_EQ(field_of(state, {{"image", png_b64(4, 4)}, {"upscaling_resize", 99}}),
              "upscaling_resize");
    // Still serving after the errors.
    EXPECT_EQ(decode(extra_single_image(state, {{"image", png_b64(6, 6)},
                                                {"upscaler_1", "tiny_x2"},
                                                {"upscaling_resize", 2}}))
                  .width,
              12u);
}

}  // namespace
}  // namespace server
