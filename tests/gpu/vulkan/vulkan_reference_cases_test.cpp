// The first reference case of SD 1.5, SDXL and FLUX.1 on a Vulkan device (lavapipe in CI) through
// sd-cli --backend vulkan0 on the full-size fixtures, in the default suite. On lavapipe they take
// 111 s, 237 s and 116 s on a quiet day of the 2-core machine (docs/vulkan.md).
#include "vulkan_reference_case.h"

namespace sd {
namespace {

TEST(VulkanReferenceCases, Sd15) {
    test::expect_case_on_vulkan("sd15");
}

TEST(VulkanReferenceCases, Sdxl) {
    test::expect_case_on_vulkan("sdxl");
}

TEST(VulkanReferenceCases, Flux) {
    test::expect_case_on_vulkan("flux");
}

}  // namespace
}  // namespace sd
