// sd-cli with --backend on a Vulkan device (lavapipe in CI): SD 1.5 with its UNet at a tenth of
// its widths (test::tiny_sd15_checkpoint), 64x64 in 3 steps. All on the device, the diffusion
// model alone there (mixed placement) and a weight budget far below the model's (--max-vram)
// give the host's image; the budget's is byte for byte the all-device one. Where Vulkan is
// missing, a Vulkan backend is one line and the CPU. A ControlNet runs where --backend puts it.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "test_util.h"
#include "vulkan_test_util.h"

namespace sd {
namespace {

class VulkanCli : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { model_ = new std::string(test::tiny_sd15_checkpoint(false)); }
    static void TearDownTestSuite() { delete model_; }

    // Runs sd-cli with `extra` arguments into `name` (a temporary path) and returns its output.
    static cli::RunResult generate(const std::string& name, const std::vector<std::string>& extra,
                                   const std::string& env = "") {
        std::vector<std::string> args = {"-m",
                                         *model_,
                                         "-p",
                                         "a lovely cat",
                                         "--steps",
                                         "3",
                                         "-W",
                                         "64",
                                         "-H",
                                         "64",
                                         "-s",
                                         "42",
                                         "-t",
                                         "2",
                                         "-v",
                                         "-o",
                                         test::temp_path(name)};
        args.insert(args.end(), extra.begin(), extra.end());
        cli::RunResult r = cli::run_cli(args, "", env);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        EXPECT_EQ(r.output.find("[ERROR]"), std::string::npos) << r.output;
        return r;
    }
    static std::vector<uint8_t> pixels(const std::string& name) {
        return image::read_image(test::temp_path(name), 3).pixels;
    }
    static std::string* model_;
};
std::string* VulkanCli::model_ = nullptr;

// The calls the -v log reports for `what` on vulkan0, by their submissions.
std::vector<int> submissions_of(const std::string& log, const std::string& what) {
    std::vector<int> out;
    const std::regex call(what + R"( on vulkan0: ([0-9]+) submissions)");
    for (std::sregex_iterator it(log.begin(), log.end(), call), end; it != end; ++it)
        out.push_back(std::stoi((*it)[1]));
    return out;
}

TEST_F(VulkanCli, PlacementsGiveTheHostsImage) {
    (void)test::first_vulkan_device();  // a named setup error where there is no device
    generate("cpu.png", {});
    const cli::RunResult all = generate("vulkan.png", {"--backend", "vulkan0"});
    EXPECT_NE(all.output.find("diffusion model on vulkan0, VAE on vulkan0"), std::string::npos)
        << all.output;
    const std::vector<int> calls = submissions_of(all.output, "diffusion model call");
    EXPECT_EQ(calls.size(), 6u) << all.output;  // 3 steps, both sides of guidance
    for (int n : calls) EXPECT_EQ(n, 1) << "a diffusion model call's submissions";
    EXPECT_GE(test::psnr(pixels("vulkan.png"), pixels("cpu.png")), 40.0);

    const cli::RunResult mixed =
        generate("mixed.png", {"--backend", "diffusion=vulkan0,te=cpu,vae=cpu"});
    EXPECT_NE(mixed.output.find("diffusion model on vulkan0, VAE on the CPU"), std::string::npos)
        << mixed.output;
    EXPECT_GE(test::psnr(pixels("mixed.png"), pixels("vulkan.png")), 40.0);

    // 5 MiB of the UNet's 20 MiB stay; the rest is uploaded per use, with the same result.
    const cli::RunResult budget =
        generate("budget.png", {"--backend", "vulkan0", "--max-vram", "0.005"});
    EXPECT_NE(budget.output.find("at most 5.1 MiB"), std::string::npos) << budget.output;
    EXPECT_EQ(pixels("budget.png"), pixels("vulkan.png"));
}

// SD 1.5's ControlNet at a tenth of its widths, its hint the reference case's edges: on the
// device with --backend vulkan0 (each call's residuals back in one submission), on the CPU
// with --control-net-cpu, the same image either way and the host's.
TEST_F(VulkanCli, ControlNetRunsOnTheDevice) {
    (void)test::first_vulkan_device();
    const std::vector<std::string> control = {
        "--control-net", test::tiny_sd15_control_net(), "--control-image",
        test::fixtures_dir() + "/reference/controlnet/edges.png"};
    auto with = [&](std::vector<std::string> extra) {
        extra.insert(extra.begin(), control.begin(), control.end());
        return extra;
    };
    generate("plain.png", {});
    generate("cn_cpu.png", with({}));
    EXPECT_NE(pixels("cn_cpu.png"), pixels("plain.png")) << "the ControlNet changed nothing";

    const cli::RunResult device = generate("cn_vulkan.png", with({"--backend", "vulkan0"}));
    EXPECT_NE(device.output.find("ControlNet on vulkan0"), std::string::npos) << device.output;
    const std::vector<int> calls = submissions_of(device.output, "ControlNet call");
    EXPECT_EQ(calls.size(), 6u) << device.output;  // 3 steps, both sides of guidance
    for (int n : calls) EXPECT_EQ(n, 1) << "a ControlNet call's submissions";
    EXPECT_EQ(submissions_of(device.output, "ControlNet hint").size(), 1u) << device.output;
    EXPECT_GE(test::psnr(pixels("cn_vulkan.png"), pixels("cn_cpu.png")), 40.0);

    const cli::RunResult kept =
        generate("cn_kept.png", with({"--backend", "vulkan0", "--control-net-cpu"}));
    EXPECT_EQ(kept.output.find("ControlNet on vulkan0"), std::string::npos) << kept.output;
    EXPECT_GE(test::psnr(pixels("cn_kept.png"), pixels("cn_vulkan.png")), 40.0);
}

TEST_F(VulkanCli, WithoutVulkanTheBackendIsOneLineAndTheCpu) {
    generate("cpu_only.png", {});
    // No driver for the loader to find: no device.
    const cli::RunResult r = generate("no_vulkan.png", {"--backend", "vulkan0"},
                                      "VK_ICD_FILENAMES=/nonexistent/icd.json ");
    EXPECT_NE(r.output.find("backend: vulkan0: no Vulkan ("), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("diffusion model on vulkan0"), std::string::npos) << r.output;
    EXPECT_EQ(pixels("no_vulkan.png"), pixels("cpu_only.png"));
}

TEST_F(VulkanCli, AutoFitLeavesACpuDeviceAlone) {
    // lavapipe is a CPU device: --auto-fit keeps the models on the CPU, and says why with -v.
    generate("auto_fit_cpu.png", {});
    const cli::RunResult r = generate("auto_fit.png", {"--auto-fit"});
    EXPECT_NE(r.output.find("auto-fit: no GPU (vulkan0 is a CPU device); the models run on the "
                            "CPU"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("diffusion model on vulkan0"), std::string::npos) << r.output;
    EXPECT_EQ(pixels("auto_fit.png"), pixels("auto_fit_cpu.png"));
}

}  // namespace
}  // namespace sd
