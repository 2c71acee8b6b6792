// SD 1.5's first reference case on a Vulkan device (lavapipe in CI) through sd-cli --backend
// vulkan0 on the full-size fixtures, in the default suite. SDXL's and FLUX.1's are in
// vulkan_reference_cases_large_test.cpp (`ctest -L large`).
#include "vulkan_reference_case.h"

namespace sd {
namespace {

TEST(VulkanReferenceCases, Sd15) {
    test::expect_case_on_vulkan("sd15");
}

}  // namespace
}  // namespace sd
