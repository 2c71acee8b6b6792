// The upscaler C API: a context from an ESRGAN file, its factor, upscaled images in the
// library's layout, and NULL / false (with a logged reason) for everything that is wrong.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "esrgan_files.h"
#include "stable-diffusion.h"
#include "test_util.h"

namespace {

std::string tiny_model(int upsamples) {
    const std::string path =
        sd::test::temp_path("api_esrgan_" + std::to_string(upsamples) + ".safetensors");
    sd::test::TinyEsrgan t;
    t.upsamples = upsamples;
    sd::test::write_tiny_esrgan(path, t, 11);
    return path;
}

std::vector<std::string> g_log;
void capture(sd_log_level_t level, const char* text, void*) {
    if (level == SD_LOG_ERROR) g_log.push_back(text);
}

TEST(UpscalerApi, UpscalesWithTheModelsFactor) {
    upscaler_ctx_t* ctx = new_upscaler_ctx(tiny_model(2).c_str(), false, 2, 32, nullptr, nullptr);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(get_upscale_factor(ctx), 4);
    std::vector<uint8_t> pixels(10 * 6 * 3, 128);
    sd_image_t in{10, 6, 3, pixels.data()};
    sd_image_t* out = nullptr;
    int count = 0;
    ASSERT_TRUE(upscale(ctx, in, 2, &out, &count));  // the factor argument is not used
    ASSERT_EQ(count, 1);
    EXPECT_EQ(out[0].width, 40u);
    EXPECT_EQ(out[0].height, 24u);
    EXPECT_EQ(out[0].channel, 3u);
    free_sd_images(out, count);
    free_upscaler_ctx(ctx);
    free_upscaler_ctx(nullptr);
    EXPECT_EQ(get_upscale_factor(nullptr), 1);
}

TEST(UpscalerApi, BadModelsAndImagesFail) {
    sd_set_log_callback(capture, nullptr);
    g_log.clear();
    EXPECT_EQ(new_upscaler_ctx(nullptr, false, 1, 128, nullptr, nullptr), nullptr);
    EXPECT_EQ(new_upscaler_ctx("/nonexistent/model.pth", false, 1, 128, nullptr, nullptr), nullptr);
    const std::string path = tiny_model(1);
    EXPECT_EQ(new_upscaler_ctx(path.c_str(), false, 1, 128, "gpu9", nullptr), nullptr);
    ASSERT_FALSE(g_log.empty());
    EXPECT_NE(g_log.back().find("gpu9"), std::string::npos) << g_log.back();

    upscaler_ctx_t* ctx = new_upscaler_ctx(path.c_str(), false, 1, 128, "cpu", "disk");
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(get_upscale_factor(ctx), 2);
    std::vector<uint8_t> pixels(4 * 4 * 2, 7);
    sd_image_t* out = reinterpret_cast<sd_image_t*>(&pixels);  // must be cleared
    int count = 5;
    EXPECT_FALSE(upscale(ctx, sd_image_t{4, 4, 2, pixels.data()}, 2, &out, &count));
    EXPECT_EQ(out, nullptr);
    EXPECT_EQ(count, 0);
    EXPECT_FALSE(upscale(ctx, sd_image_t{4, 4, 3, nullptr}, 2, &out, &count));
    EXPECT_FALSE(upscale(nullptr, sd_image_t{4, 4, 3, pixels.data()}, 2, &out, &count));
    free_upscaler_ctx(ctx);
    sd_set_log_callback(nullptr, nullptr);
}

}  // namespace
