// Runs the C11 program tests/c_api/generate_c11.c: a C user of stable-diffusion.h that
// generates the sd15 txt2img_euler reference case and checks its PSNR itself.
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

}  // namespace
}  // namespace sd
