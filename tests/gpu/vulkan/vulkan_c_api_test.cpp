// The C API with backend "vulkan0" (lavapipe in CI), on SD 1.5 with its UNet at a tenth of its
// widths: the diffusion model and the VAE run on the device; a device lost in the middle of
// generate_image fails that call with a line naming the device and the context goes on (the
// next call runs on the device opened anew); where the machine has no Vulkan (the loader
// finds no driver), the backend is one line and the context runs on the CPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/c_api_test_util.h"
#include "gpu/vulkan/vulkan_fault.h"
#include "stable-diffusion.h"
#include "test_util.h"
#include "vulkan_test_util.h"

namespace sd {
namespace {

sd_ctx_t* open_tiny_sd15(const std::string& model) {
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.model_path = model.c_str();
    cp.backend = "vulkan0";
    cp.n_threads = 2;
    return new_sd_ctx(&cp);
}

// One 64x64 image of two steps; empty when generate_image fails.
std::vector<uint8_t> generate(sd_ctx_t* ctx) {
    sd_img_gen_params_t p;
    sd_img_gen_params_init(&p);
    p.prompt = "a lovely cat";
    p.width = p.height = 64;
    p.seed = 42;
    p.sample_params.sample_steps = 2;
    return test::generate_one(ctx, p);
}

class VulkanCApi : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        ::setenv("SD_TOKENIZER_DIR", (test::fixtures_dir() + "/tokenizers").c_str(), 1);
        model_ = new std::string(test::tiny_sd15_checkpoint(false));
    }
    static void TearDownTestSuite() { delete model_; }
    static std::string* model_;
};
std::string* VulkanCApi::model_ = nullptr;

TEST_F(VulkanCApi, ALostDeviceFailsOneCallAndTheContextGoesOn) {
    test::CapturedLog log;
    sd_ctx_t* ctx = open_tiny_sd15(*model_);
    ASSERT_NE(ctx, nullptr) << log.text;
    EXPECT_GE(log.count("diffusion model on vulkan0"), 1) << log.text;
    const std::vector<uint8_t> first = generate(ctx);
    EXPECT_FALSE(first.empty()) << log.text;
    // The next call's second submission fails as a lost device's.
    gpu::set_submit_fault(VK_ERROR_DEVICE_LOST, 2);
    EXPECT_TRUE(generate(ctx).empty()) << "a call on a lost device gave an image";
    EXPECT_GE(log.count("vulkan0: vkQueueSubmit failed: VK_ERROR_DEVICE_LOST"), 1) << log.text;
    EXPECT_EQ(log.count("vulkan0 was lost; opened it anew"), 1) << log.text;
    EXPECT_EQ(generate(ctx), first) << "the device opened anew gives the same image";
    free_sd_ctx(ctx);
}

// In a child process whose loader finds no driver: one line, the CPU, an image. Returns what
// went wrong, empty when nothing did.
std::string without_vulkan(const std::string& model) {
    ::setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
    test::CapturedLog log;
    sd_ctx_t* ctx = open_tiny_sd15(model);
    if (!ctx) return "new_sd_ctx failed: " + log.text;
    const bool image = !generate(ctx).empty();
    free_sd_ctx(ctx);
    if (!image) return "no image: " + log.text;
    if (log.count("no Vulkan") != 1 || log.count("backend: vulkan0: no Vulkan (") != 1 ||
        log.count("running on the CPU") != 1)
        return "not one 'no Vulkan' line: " + log.text;
    if (log.count("on vulkan0") != 0) return "something placed on vulkan0: " + log.text;
    return "";
}

TEST_F(VulkanCApi, WithoutVulkanTheBackendIsOneLineAndTheCpu) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: Vulkan not probed yet
    const std::string model = *model_;
    EXPECT_EXIT(
        {
            const std::string wrong = without_vulkan(model);
            std::fprintf(stderr, "%s\n", wrong.empty() ? "clean" : wrong.c_str());
            std::exit(wrong.empty() ? 0 : 1);
        },
        testing::ExitedWithCode(0), "clean");
}

}  // namespace
}  // namespace sd
