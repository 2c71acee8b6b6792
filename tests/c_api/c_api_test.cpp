// Runs the C11 programs in tests/c_api: generate_c11.c (a C user of stable-diffusion.h that
// generates the sd15 txt2img_euler reference case and checks its PSNR itself) and
// minimal_binding.c.
#include <gtest/gtest.h>

#include "fixture_files.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(CApi, C11ProgramGeneratesTheReferenceImage) {
    std::string model = test::generated_checkpoint("sd15", "f16", 1);
    std::string fx = test::fixtures_dir();
    std::string cmd = std::string(SD_GENERATE_C11) + " " + model + " " + fx + "/tokenizers " + fx +
                      "/reference/sd15/txt2img_euler.png";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// tests/c_api/minimal_binding.c: load, txt2img, img2img from its result, upscale (not built:
// new_upscaler_ctx must fail with a log line and the binding goes on), free - at 64x64, 2 steps.
TEST(CApi, MinimalBindingRunsEndToEnd) {
    std::string model = test::generated_checkpoint("sd15", "f16", 1);
    std::string fx = test::fixtures_dir();
    std::string cmd = "SD_TOKENIZER_DIR=" + fx + "/tokenizers " + std::string(SD_MINIMAL_BINDING) +
                      " " + model + " " + testing::TempDir() + "/no-such-esrgan.pth 64 2";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
}  // namespace sd
