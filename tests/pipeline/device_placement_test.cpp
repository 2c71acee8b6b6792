// --auto-fit (fit_to_devices): the diffusion model and the VAE placed by their sizes on the GPU
// with the most memory, never on a CPU-class device; the weights streamed under what is left
// where the diffusion model does not fit; an explicit budget and --vae-on-cpu kept.
#include "pipeline/device_placement.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "gpu/devices.h"

namespace sd {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

gpu::DeviceInfo device(const char* name, uint64_t bytes, bool cpu = false,
                       std::optional<uint64_t> free = std::nullopt) {
    gpu::DeviceInfo d;
    d.name = name;
    d.device_local_bytes = bytes;
    d.free_bytes = free;
    d.cpu = cpu;
    return d;
}

DevicePlacement auto_fit() {
    DevicePlacement p;
    p.auto_fit = true;
    return p;
}

TEST(AutoFit, BothFitOnTheLargestGpu) {
    std::string why;
    const DevicePlacement p =
        fit_to_devices({device("vulkan0", 4 * kGiB), device("vulkan1", 12 * kGiB)}, auto_fit(),
                       5 * kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "vulkan1");
    EXPECT_EQ(p.vae, "vulkan1");
    EXPECT_EQ(p.weight_budget, 0u);
    EXPECT_FALSE(p.auto_fit);
    EXPECT_NE(why.find("diffusion model and VAE on vulkan1"), std::string::npos) << why;
}

TEST(AutoFit, TheVaeStaysOnTheCpuWhereOnlyTheDiffusionModelFits) {
    std::string why;
    // 8 GiB less the 1 GiB reserve: 6.9 GiB of UNet fits, with the VAE it does not.
    DevicePlacement p = fit_to_devices({device("vulkan0", 8 * kGiB)}, auto_fit(),
                                       6 * kGiB + 900 * (kGiB >> 10), kGiB / 2, why);
    EXPECT_EQ(p.diffusion, "vulkan0");
    EXPECT_EQ(p.vae, "");
    EXPECT_EQ(p.weight_budget, 0u);
    EXPECT_NE(why.find("VAE on the CPU"), std::string::npos) << why;
    // --vae-on-cpu: the VAE stays even where both fit.
    DevicePlacement asked = auto_fit();
    asked.vae_on_cpu = true;
    p = fit_to_devices({device("vulkan0", 8 * kGiB)}, asked, kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "vulkan0");
    EXPECT_EQ(p.vae, "");
}

TEST(AutoFit, ATooLargeModelStreamsItsWeightsUnderWhatIsLeft) {
    std::string why;
    // 24 GiB of FLUX on a 12 GiB GPU: 12 - 1.2 GiB reserve kept, the rest per use.
    DevicePlacement p =
        fit_to_devices({device("vulkan0", 12 * kGiB)}, auto_fit(), 24 * kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "vulkan0");
    EXPECT_EQ(p.vae, "");
    EXPECT_EQ(p.weight_budget, 12 * kGiB - 12 * kGiB / 10);
    EXPECT_NE(why.find("uploaded per use"), std::string::npos) << why;
    // An explicit --max-vram caps it.
    DevicePlacement asked = auto_fit();
    asked.weight_budget = 2 * kGiB;
    p = fit_to_devices({device("vulkan0", 12 * kGiB)}, asked, 24 * kGiB, kGiB / 4, why);
    EXPECT_EQ(p.weight_budget, 2 * kGiB);
    p = fit_to_devices({device("vulkan0", 12 * kGiB)}, asked, kGiB, kGiB / 4, why);
    EXPECT_EQ(p.vae, "vulkan0");
    EXPECT_EQ(p.weight_budget, 2 * kGiB) << "the budget asked for stays";
}

TEST(AutoFit, ADeviceThatReportsItsFreeMemoryIsFilledByThat) {
    std::string why;
    // vulkan1 is larger, but another process holds 10 of its 12 GiB (VK_EXT_memory_budget):
    // the 8 GiB vulkan0 with 7 free takes both.
    DevicePlacement p = fit_to_devices({device("vulkan0", 8 * kGiB, false, 7 * kGiB),
                                        device("vulkan1", 12 * kGiB, false, 2 * kGiB)},
                                       auto_fit(), 5 * kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "vulkan0");
    EXPECT_EQ(p.vae, "vulkan0");
    EXPECT_NE(why.find("vulkan0 has 7.0 GiB free"), std::string::npos) << why;
    // Alone, vulkan1's 2 GiB free (1 GiB reserve) keeps 1 GiB of a 5 GiB model's weights.
    p = fit_to_devices({device("vulkan1", 12 * kGiB, false, 2 * kGiB)}, auto_fit(), 5 * kGiB,
                       kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "vulkan1");
    EXPECT_EQ(p.vae, "");
    EXPECT_EQ(p.weight_budget, kGiB);
    // A GPU another process fills (0 free, reported) is not taken for an empty one.
    p = fit_to_devices({device("vulkan0", 12 * kGiB, false, 0)}, auto_fit(), kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "");
    EXPECT_NE(why.find("too little to spare"), std::string::npos) << why;
}

TEST(AutoFit, CpuDevicesAndSmallGpusAreNotUsed) {
    std::string why;
    DevicePlacement p =
        fit_to_devices({device("vulkan0", 23 * kGiB, true)}, auto_fit(), kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "");
    EXPECT_EQ(p.vae, "");
    EXPECT_NE(why.find("no GPU (vulkan0 is a CPU device)"), std::string::npos) << why;
    p = fit_to_devices({device("vulkan0", kGiB)}, auto_fit(), kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "");
    EXPECT_NE(why.find("too little to spare"), std::string::npos) << why;
    p = fit_to_devices({}, auto_fit(), kGiB, kGiB / 4, why);
    EXPECT_EQ(p.diffusion, "");
    EXPECT_NE(why.find("no Vulkan device"), std::string::npos) << why;
}

}  // namespace
}  // namespace sd
