// The reference cases on a Vulkan device (lavapipe in CI): the first case of SD 1.5's, SDXL's
// and FLUX.1's folders of ../shared/fixtures/reference/ through sd-cli with --backend vulkan0
// (the diffusion model and the VAE on the device, the text encoders on the CPU), on the
// full-size fixture files, must give the reference image within the folder's floor (40 dB), as
// the CPU does.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "cli/reference_cases.h"
#include "vulkan_test_util.h"

namespace sd {
namespace {

void expect_case_on_vulkan(const std::string& family) {
    const std::string device = test::first_vulkan_device()->name();
    const std::vector<test::ReferenceCase> cases = test::load_cases();
    const auto c = std::find_if(cases.begin(), cases.end(),
                                [&](const test::ReferenceCase& r) { return r.family == family; });
    ASSERT_NE(c, cases.end()) << family << ": no reference case";
    const auto t0 = std::chrono::steady_clock::now();
    const double psnr = test::run_case(*c, true, {"--backend", device});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s/%s on %s: PSNR %.2f dB in %.0f s\n", family.c_str(), c->id.c_str(),
                device.c_str(), psnr, seconds);
    testing::Test::RecordProperty("psnr_db", std::to_string(psnr));
    EXPECT_GE(psnr, test::psnr_floor(family)) << family << "/" << c->id << " on " << device;
}

TEST(VulkanReferenceCases, Sd15) {
    expect_case_on_vulkan("sd15");
}

TEST(VulkanReferenceCases, Sdxl) {
    expect_case_on_vulkan("sdxl");
}

TEST(VulkanReferenceCases, Flux) {
    expect_case_on_vulkan("flux");
}

}  // namespace
}  // namespace sd
