// Whole models on a Vulkan device: the model code of src/models, unchanged, on device tensors
// against the same forward on the host. The UNet is SD 1.5's layout at a tenth of its widths
// (test::tiny_sd15_checkpoint), random weights from the fixtures' generator.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "gpu/device_tensor.h"
#include "gpu/devices.h"
#include "io/io_test_util.h"
#include "models/chroma_radiance.h"
#include "models/controlnet.h"
#include "models/flux.h"
#include "models/qwen_image.h"
#include "models/tiny_flux.h"
#include "models/tiny_qwen_image.h"
#include "models/unet.h"
#include "nn/weights.h"
#include "test_util.h"
#include "vulkan_test_util.h"

namespace sd {
namespace {

double max_abs(const Tensor& t) {
    double m = 0;
    for (float v : t.to_vector()) m = std::max(m, std::fabs(static_cast<double>(v)));
    return m;
}

TEST(VulkanModels, Sd15UNetMatchesTheHost) {
    ModelFiles files;
    files.add(test::tiny_sd15_checkpoint(/*unet_only=*/true), ModelRole::Checkpoint);
    const UNet unet = UNet::load(Weights(files, "model.diffusion_model."));
    ASSERT_EQ(unet.config().model_channels, 32);
    const Tensor x = test::random_tensor({2, 4, 16, 8}, 1);
    const Tensor t = Tensor::from_vector({2}, {981.0f, 21.0f});
    const Tensor context = test::random_tensor({2, 7, 768}, 2);
    const Tensor want = unet.forward(x, t, context);

    auto stream = test::first_vulkan_stream();
    // The timesteps stay on the host (as pipeline/device_placement passes them): the time
    // embedding is computed there and joins the device activations as an upload.
    const Tensor got =
        gpu::to_host(unet.forward(gpu::to_device(x, *stream), t, gpu::to_device(context, *stream)));
    const test::Diff d = test::compare(got, want);
    EXPECT_LE(d.max_abs, 2e-4 * max_abs(want)) << "max |want| " << max_abs(want);
    const gpu::StreamStats s = gpu::stream_stats(*stream);
    // The pass is recorded whole and submitted once, when the host reads the result.
    EXPECT_EQ(s.submissions, 1);
    EXPECT_EQ(s.cpu_fallbacks, 0);
    EXPECT_GT(s.dispatches, 100);
    std::printf(
        "UNet pass on %s: %lld submissions, %lld dispatches, %lld weight bytes, "
        "%lld bytes up, %lld down, device peak %lld bytes\n",
        gpu::stream_device_name(*stream).c_str(), (long long)s.submissions, (long long)s.dispatches,
        (long long)s.weight_bytes_uploaded, (long long)s.bytes_uploaded,
        (long long)s.bytes_downloaded, (long long)s.device_bytes_peak);
}

// SD 1.5's ControlNet at a tenth of its widths: the hint encoder and the 13 residuals, each
// against the host's, the residuals of a call brought back in one submission.
TEST(VulkanModels, ControlNetMatchesTheHost) {
    ModelFiles files;
    files.add(test::tiny_sd15_control_net(), ModelRole::Checkpoint);
    const ControlNet net = ControlNet::load(Weights(files, "control_model."));
    const Tensor image = test::random_tensor({1, 3, 128, 64}, 3, 0.0f, 1.0f);
    const Tensor x = test::random_tensor({1, 4, 16, 8}, 4);
    const Tensor t = Tensor::from_vector({1}, {500.0f});
    const Tensor context = test::random_tensor({1, 7, 768}, 5);
    const Tensor hint = net.encode_hint(image);
    const std::vector<Tensor> want = net.forward(x, t, context, {}, hint);

    auto stream = test::first_vulkan_stream();
    const Tensor got_hint = gpu::to_host(net.encode_hint(gpu::to_device(image, *stream)));
    EXPECT_LE(test::compare(got_hint, hint).max_abs, 2e-4 * max_abs(hint));
    const int64_t before = gpu::stream_stats(*stream).submissions;
    const std::vector<Tensor> got =
        gpu::to_host(net.forward(gpu::to_device(x, *stream), t, gpu::to_device(context, *stream),
                                 {}, gpu::to_device(hint, *stream)));
    EXPECT_EQ(gpu::stream_stats(*stream).submissions - before, 1);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_FALSE(gpu::on_device(got[i]));
        EXPECT_LE(test::compare(got[i], want[i]).max_abs, 2e-4 * max_abs(want[i])) << i;
    }
}

// SDXL's layout at a fifth of its widths (64-channel heads: 1, 2 and 4 of them; 2 and 10
// transformer blocks a level; label_emb on the 2816-wide vector).
TEST(VulkanModels, SdxlUNetMatchesTheHost) {
    ModelFiles files;
    files.add(test::scaled_unet_checkpoint("sdxl", 5, /*unet_only=*/true), ModelRole::Checkpoint);
    const UNet unet = UNet::load(Weights(files, "model.diffusion_model."));
    ASSERT_EQ(unet.config().model_channels, 64);
    ASSERT_EQ(unet.config().adm_in_channels, 2816);
    const Tensor x = test::random_tensor({1, 4, 8, 16}, 3);
    const Tensor t = Tensor::from_vector({1}, {500.0f});
    const Tensor context = test::random_tensor({1, 5, 2048}, 4);
    const Tensor y = test::random_tensor({1, 2816}, 5);
    const Tensor want = unet.forward(x, t, context, y);

    auto stream = test::first_vulkan_stream();
    auto run = [&] {
        return gpu::to_host(unet.forward(gpu::to_device(x, *stream), t,
                                         gpu::to_device(context, *stream),
                                         gpu::to_device(y, *stream)));
    };
    // The first pass uploads the weights (submitting every 256 MiB of staging); the next is
    // one submission.
    EXPECT_LE(test::compare(run(), want).max_abs, 2e-4 * max_abs(want));
    const int64_t first = gpu::stream_stats(*stream).submissions;
    EXPECT_LE(test::compare(run(), want).max_abs, 2e-4 * max_abs(want));
    EXPECT_EQ(gpu::stream_stats(*stream).submissions - first, 1);
    EXPECT_EQ(gpu::stream_stats(*stream).cpu_fallbacks, 0);
}

// FLUX.1-dev's layout at width 128 (models/tiny_flux.h): double and single blocks, RoPE on
// the attention, QK RMS norms, modulation, an odd latent width padded to whole patches.
TEST(VulkanModels, FluxMatchesTheHost) {
    ModelFiles files;
    files.add(test::write_f32_safetensors(test::tiny_flux(2, 2, true), "vulkan_flux_tiny"),
              ModelRole::DiffusionModel);
    const FluxModel flux = FluxModel::load(Weights(files, "model.diffusion_model."));
    const Tensor x = test::random_tensor({1, 16, 6, 5}, 11);
    const Tensor t = Tensor::from_vector({1}, {0.7f});
    const Tensor context = test::random_tensor({1, 5, 32}, 12);
    const Tensor y = test::random_tensor({1, 16}, 13);
    const Tensor want = flux.forward(x, t, context, y, 3.5f);

    auto stream = test::first_vulkan_stream();
    const Tensor got =
        gpu::to_host(flux.forward(gpu::to_device(x, *stream), t, gpu::to_device(context, *stream),
                                  gpu::to_device(y, *stream), 3.5f));
    EXPECT_LE(test::compare(got, want).max_abs, 2e-4 * max_abs(want));
    const gpu::StreamStats s = gpu::stream_stats(*stream);
    EXPECT_EQ(s.submissions, 1 + s.cpu_fallbacks);
    std::printf("FLUX pass on %s: %lld submissions, %lld dispatches, %lld ops on the host\n",
                gpu::stream_device_name(*stream).c_str(), (long long)s.submissions,
                (long long)s.dispatches, (long long)s.cpu_fallbacks);
}

// Chroma's layout (no vector input, the modulation table, a T5 mask with -inf and finite
// entries): the kept text tokens and the key mask are made where the image tokens are.
TEST(VulkanModels, ChromaWithATextMaskMatchesTheHost) {
    ModelFiles files;
    files.add(test::write_f32_safetensors(test::tiny_chroma(2, 2, 2), "vulkan_chroma_tiny"),
              ModelRole::DiffusionModel);
    const FluxModel chroma = FluxModel::load(Weights(files, "model.diffusion_model."));
    const Tensor x = test::random_tensor({1, 16, 6, 5}, 11);
    const Tensor t = Tensor::from_vector({1}, {0.7f});
    const Tensor context = test::random_tensor({1, 5, 32}, 12);
    const Tensor mask = Tensor::from_vector({5}, {0.0f, -1.0f, -INFINITY, 0.5f, -INFINITY});
    const Tensor want = chroma.forward(x, t, context, {}, 0.0f, {}, {}, mask);

    auto stream = test::first_vulkan_stream();
    const Tensor got =
        gpu::to_host(chroma.forward(gpu::to_device(x, *stream), t, gpu::to_device(context, *stream),
                                    {}, 0.0f, {}, {}, gpu::to_device(mask, *stream)));
    EXPECT_LE(test::compare(got, want).max_abs, 2e-4 * max_abs(want));
}

// Chroma-Radiance: the pixel patches, the transformer and the NeRF head (its per-patch
// generated weights, the position code made beside the pixels) on the device.
TEST(VulkanModels, ChromaRadianceMatchesTheHost) {
    ModelFiles files;
    files.add(test::write_f32_safetensors(test::tiny_chroma_radiance(1, 1, 2), "vulkan_radiance"),
              ModelRole::DiffusionModel);
    const ChromaRadianceModel radiance =
        ChromaRadianceModel::load(Weights(files, "model.diffusion_model."));
    const Tensor x = test::random_tensor({1, 3, 40, 24}, 21);
    const Tensor t = Tensor::from_vector({1}, {0.6f});
    const Tensor context = test::random_tensor({1, 4, 32}, 22);
    const Tensor mask = Tensor::from_vector({4}, {0.0f, -INFINITY, 0.0f, 0.0f});
    const Tensor want = radiance.forward(x, t, context, mask);

    auto stream = test::first_vulkan_stream();
    const Tensor got = gpu::to_host(
        radiance.forward(gpu::to_device(x, *stream), t, gpu::to_device(context, *stream), mask));
    EXPECT_LE(test::compare(got, want).max_abs, 2e-4 * max_abs(want));
}

// Qwen-Image on the device: plain with an Edit reference, and Layered (3 latent frames, its
// addition_t_embedding, a reference numbered -1).
TEST(VulkanModels, QwenImageAndLayeredMatchTheHost) {
    for (bool layered : {false, true}) {
        std::map<std::string, Tensor> named;
        for (auto& [name, t] : test::tiny_qwen_image(2, false, layered, 32))
            named["model.diffusion_model." + name] = t;
        ModelFiles files;
        files.add(test::write_f32_safetensors(named, "vulkan_qwen_image"),
                  ModelRole::DiffusionModel);
        const QwenImageModel qwen = QwenImageModel::load(Weights(files, "model.diffusion_model."));
        const Tensor x = layered ? test::random_tensor({1, 16, 3, 6, 4}, 31)
                                 : test::random_tensor({1, 16, 6, 4}, 31);
        const Tensor t = Tensor::from_vector({1}, {650.0f});
        const Tensor context = test::random_tensor({1, 5, 32}, 32);
        const Tensor ref = test::random_tensor({1, 16, 4, 6}, 33);
        const RefIndexMode mode = layered ? RefIndexMode::Decrease : RefIndexMode::Increase;
        const Tensor want = qwen.forward(x, t, context, {ref}, mode);

        auto stream = test::first_vulkan_stream();
        const Tensor got = gpu::to_host(qwen.forward(gpu::to_device(x, *stream), t,
                                                     gpu::to_device(context, *stream),
                                                     {gpu::to_device(ref, *stream)}, mode));
        ASSERT_EQ(got.shape(), x.shape());
        EXPECT_LE(test::compare(got, want).max_abs, 2e-4 * max_abs(want)) << "layered " << layered;
    }
}

}  // namespace
}  // namespace sd
