// One reference case of ../shared/fixtures/reference/ through sd-cli with --backend on the
// first Vulkan device (the diffusion model and the VAE there, the text encoders on the CPU), on
// the full-size fixture files: the image must match the reference within the family's floor,
// as on the CPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/reference_cases.h"
#include "vulkan_test_util.h"

namespace sd::test {

// The first case of `family`'s folder.
inline void expect_case_on_vulkan(const std::string& family) {
    const std::string device = first_vulkan_device()->name();
    const std::vector<ReferenceCase> cases = load_cases();
    const auto c = std::find_if(cases.begin(), cases.end(),
                                [&](const ReferenceCase& r) { return r.family == family; });
    ASSERT_NE(c, cases.end()) << family << ": no reference case";
    const auto t0 = std::chrono::steady_clock::now();
    const double psnr = run_case(*c, true, {"--backend", device});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s/%s on %s: PSNR %.2f dB in %.0f s\n", family.c_str(), c->id.c_str(),
                device.c_str(), psnr, seconds);
    testing::Test::RecordProperty("psnr_db", std::to_string(psnr));
    EXPECT_GE(psnr, psnr_floor(family)) << family << "/" << c->id << " on " << device;
}

}  // namespace sd::test
