// Runs the C11 programs in tests/c_api: generate_c11.c (a C user of stable-diffusion.h that
// generates the sd15 txt2img_euler reference case and checks its PSNR itself) and
// minimal_binding.c.
#include <gtest/gtest.h>

#include "esrgan_files.h"
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

// tests/c_api/minimal_binding.c: load, txt2img, img2img from its result, upscale (with a
// small 4x ESRGAN; the binding checks the upscaled size), free - at 64x64, 2 steps.
TEST(CApi, MinimalBindingRunsEndToEnd) {
    std::string model = test::generated_checkpoint("sd15", "f16", 1);
    std::string fx = test::fixtures_dir();
    const std::string esrgan = test::temp_path("binding_esrgan.safetensors");
    test::write_tiny_esrgan(esrgan, test::TinyEsrgan{}, 3);
    std::string cmd = "SD_TOKENIZER_DIR=" + fx + "/tokenizers " + std::string(SD_MINIMAL_BINDING) +
                      " " + model + " " + esrgan + " 64 2";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
}  // namespace sd
