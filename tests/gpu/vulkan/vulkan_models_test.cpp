// Whole models on a Vulkan device: the model code of src/models, unchanged, on device tensors
// against the same forward on the host. The UNet is SD 1.5's layout at a tenth of its widths
// (every width that is a multiple of 320 divided by 10, the 768-wide context kept: 8 heads),
// random weights from the fixtures' generator.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "fixture_files.h"
#include "gpu/device_tensor.h"
#include "gpu/devices.h"
#include "models/unet.h"
#include "nn/weights.h"
#include "test_util.h"
#include "vulkan_test_util.h"

namespace sd {
namespace {

// sd15.tsv's UNet with every multiple of 320 divided by 10, written by mkckpt.py as f16.
std::string tiny_sd15_unet() {
    const std::string manifest = test::temp_path("tiny_sd15_unet.tsv");
    const std::string out = test::temp_path("tiny_sd15_unet.safetensors");
    std::ifstream in(test::fixtures_dir() + "/manifests/sd15.tsv");
    std::ofstream m(manifest);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model.diffusion_model.", 0) != 0) continue;
        std::istringstream fields(line);
        std::string name, dtype, dim;
        fields >> name >> dtype;
        m << name << '\t' << dtype;
        while (fields >> dim) {
            const long v = std::stol(dim);
            m << '\t' << (v % 320 == 0 ? v / 10 : v);
        }
        m << '\n';
    }
    m.close();
    test::run_or_fail("/usr/bin/python3 " + test::fixtures_dir() + "/mkckpt.py " + manifest + " " +
                      out + " --dtype f16 --seed 5");
    return out;
}

double max_abs(const Tensor& t) {
    double m = 0;
    for (float v : t.to_vector()) m = std::max(m, std::fabs(static_cast<double>(v)));
    return m;
}

TEST(VulkanModels, Sd15UNetMatchesTheHost) {
    ModelFiles files;
    files.add(tiny_sd15_unet(), ModelRole::Checkpoint);
    const UNet unet = UNet::load(Weights(files, "model.diffusion_model."));
    ASSERT_EQ(unet.config().model_channels, 32);
    const Tensor x = test::random_tensor({2, 4, 16, 8}, 1);
    const Tensor t = Tensor::from_vector({2}, {981.0f, 21.0f});
    const Tensor context = test::random_tensor({2, 7, 768}, 2);
    const Tensor want = unet.forward(x, t, context);

    auto stream = test::first_vulkan_stream();
    const Tensor got = gpu::to_host(unet.forward(
        gpu::to_device(x, *stream), gpu::to_device(t, *stream), gpu::to_device(context, *stream)));
    const test::Diff d = test::compare(got, want);
    EXPECT_LE(d.max_abs, 2e-4 * max_abs(want)) << "max |want| " << max_abs(want);
    const gpu::StreamStats s = gpu::stream_stats(*stream);
    // The pass is recorded whole: one submission for the timestep embedding (run on the host)
    // and one for the result.
    EXPECT_LE(s.submissions, 2);
    EXPECT_GT(s.dispatches, 100);
    std::printf(
        "UNet pass on %s: %lld submissions, %lld dispatches, %lld weight bytes, "
        "%lld bytes up, %lld down, device peak %lld bytes\n",
        gpu::stream_device_name(*stream).c_str(), (long long)s.submissions, (long long)s.dispatches,
        (long long)s.weight_bytes_uploaded, (long long)s.bytes_uploaded,
        (long long)s.bytes_downloaded, (long long)s.device_bytes_peak);
}

}  // namespace
}  // namespace sd
