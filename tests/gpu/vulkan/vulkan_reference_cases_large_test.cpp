// SDXL's and FLUX.1's first reference cases on a Vulkan device through sd-cli --backend vulkan0
// on the full-size fixtures. Labelled `large`: not in scripts/test.sh (`ctest -L large`). On
// lavapipe they took 237 s and 116 s alone on a fast day of the 2-core machine and 900+ s and
// 556 s beside another test on a slow one (FP32 peak 33 GFLOP/s against 50-72): a third of
// the whole suite's test time, for code that VulkanModels.SdxlUNetMatchesTheHost /
// FluxMatchesTheHost (the same layouts at reduced widths) and VulkanReferenceCases.Sd15 (a
// full UNet and VAE on the device) run in the suite.
#include "vulkan_reference_case.h"

namespace sd {
namespace {

TEST(VulkanReferenceCases, Sdxl) {
    test::expect_case_on_vulkan("sdxl");
}

TEST(VulkanReferenceCases, Flux) {
    test::expect_case_on_vulkan("flux");
}

}  // namespace
}  // namespace sd
