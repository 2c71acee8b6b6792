// sd-bench-vulkan: each Vulkan device's measured FP32 peak (peak_fma.comp) and the GFLOP/s of
// the kernels at the sizes the models run them, as % of that peak. Times are of whole
// submissions (recording, submission, wait), the second of two runs (the first builds the
// pipeline). On lavapipe (Mesa's CPU device) the figures are a sanity check only; on a GPU
// they are the kernels' real standing.
//
//   sd-bench-vulkan [--device vulkanN] [--quick]
//   sd-bench-vulkan [--device vulkanN] --model FILE | --diffusion-model FILE --vae FILE ...
//                   [-W 512] [-H 512] [--steps 3] [--cfg-scale 7] [--no-decode]
// The second form is sd-bench --model with the diffusion model and the VAE on the device:
// seconds per pass, per sampling step and for the decode, GFLOP/s against the device's
// measured peak, the device memory peak (bench/vulkan_models.sh runs it on the fixtures).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_shaders.h"
#include "model_bench.h"
#include "tensor/quant.h"

namespace sd::gpu {
namespace {

double seconds_of(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The second of two runs of `record` + submit.
double timed(CommandRecorder& rec, const std::function<void()>& record) {
    record();
    rec.submit();
    return seconds_of([&] {
        record();
        rec.submit();
    });
}

VulkanBuffer filled(CommandRecorder& rec, size_t bytes, uint8_t byte) {
    VulkanBuffer b(rec.shared_device(), bytes, VulkanBuffer::Memory::Device);
    std::vector<uint8_t> host(bytes, byte);
    rec.upload(b, host.data(), bytes);
    rec.submit();
    return b;
}

// Small values whose products stay finite: f32 0.0039 (bytes 0x3b), and for the block
// types rows quantized from them.
VulkanBuffer weight_rows(CommandRecorder& rec, DType dtype, int64_t rows, int64_t cols) {
    std::vector<float> row(size_t(cols), 0.01f);
    std::vector<uint8_t> bytes(row_bytes(dtype, cols) * size_t(rows));
    for (int64_t r = 0; r < rows; ++r)
        quantize_row(dtype, row.data(), bytes.data() + size_t(r) * row_bytes(dtype, cols), cols);
    VulkanBuffer b(rec.shared_device(), bytes.size(), VulkanBuffer::Memory::Device);
    rec.upload(b, bytes.data(), bytes.size());
    rec.submit();
    return b;
}

double peak_gflops(CommandRecorder& rec, bool quick) {
    const uint32_t groups = 1024;
    VulkanBuffer out(rec.shared_device(), groups * 256 * sizeof(float),
                     VulkanBuffer::Memory::Device);
    const VulkanKernel& k = rec.device().kernel(shaders::peak_fma());
    shaders::PeakParams params{64, 1.0f};
    // Grow the loop until a run takes a quarter second (a tenth with --quick).
    double t = 0;
    for (;;) {
        t = timed(rec, [&] { rec.dispatch(k, {&out}, &params, sizeof(params), groups); });
        if (t > (quick ? 0.1 : 0.25) || params.iterations > (1u << 24)) break;
        params.iterations *= 4;
    }
    return double(groups) * 256 * params.iterations * 32 / t / 1e9;
}

void report(const char* what, double flops, double seconds, double peak) {
    const double gflops = flops / seconds / 1e9;
    std::printf("| %-44s | %9.2f | %9.1f | %5.1f%% |\n", what, seconds * 1e3, gflops,
                100.0 * gflops / peak);
}

// The --model form's arguments into `model`; false for another argument.
bool model_argument(const std::string& a, const std::function<std::string()>& value,
                    bench::ModelBenchOptions& model) {
    if (a == "--model") return model.model = value(), true;
    if (a == "--diffusion-model") return model.diffusion_model = value(), true;
    if (a == "--vae") return model.vae = value(), true;
    if (a == "--clip_l") return model.clip_l = value(), true;
    if (a == "--clip_g") return model.clip_g = value(), true;
    if (a == "--t5xxl") return model.t5xxl = value(), true;
    if (a == "--tokenizer-dir") return model.tokenizer_dir = value(), true;
    if (a == "-W" || a == "--width") return model.width = std::atoi(value().c_str()), true;
    if (a == "-H" || a == "--height") return model.height = std::atoi(value().c_str()), true;
    if (a == "--steps") return model.steps = std::atoi(value().c_str()), true;
    if (a == "--cfg-scale") return model.cfg_scale = std::strtof(value().c_str(), nullptr), true;
    if (a == "--no-decode") return model.decode = false, true;
    return false;
}

int run(int argc, char** argv) {
    std::string name;
    bool quick = false;
    bench::ModelBenchOptions model;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            SD_CHECK(i + 1 < argc, "%s needs a value", a.c_str());
            return argv[++i];
        };
        if (a == "--device")
            name = value();
        else if (a == "--quick")
            quick = true;
        else if (!model_argument(a, value, model))
            fail(
                "unknown argument '%s' (sd-bench-vulkan [--device vulkanN] [--quick] | "
                "[--device vulkanN] --model FILE [-W N] [-H N] [--steps N] ...)",
                argv[i]);
    }
    const DeviceList& devices = vulkan_devices();
    if (devices.devices.empty()) fail("no Vulkan device: %s", devices.unavailable.c_str());
    if (name.empty()) name = devices.devices[0].name;
    auto device = VulkanDevice::open(name);
    for (const DeviceInfo& d : devices.devices)
        if (d.name == device->name())
            std::printf("%s: %s\n", d.name.c_str(), d.description.c_str());
    CommandRecorder rec(device);
    const double peak = peak_gflops(rec, quick);
    std::printf("measured FP32 FMA peak: %.1f GFLOP/s\n\n", peak);
    if (!model.model.empty() || !model.diffusion_model.empty()) {
        model.backend = device->name();
        return bench::run_model_bench(model, peak);
    }
    std::printf("| %-44s | %9s | %9s | %6s |\n| --- | ---: | ---: | ---: |\n", "kernel", "ms",
                "GFLOP/s", "peak");

    // Linear: SD 1.5's feed-forward at 64x64 latents (4096 tokens, 320 -> 1280), in the
    // weight dtypes the models ship in.
    const uint32_t m = quick ? 1024 : 4096, n = 1280, k = 320;
    VulkanBuffer x = filled(rec, size_t(m) * k * 4, 0x3b), y = filled(rec, size_t(m) * n * 4, 0);
    // Both blockings where the device runs both; it uses device_blocking()'s.
    using shaders::Blocking;
    std::vector<Blocking> blockings = {Blocking::Tiled};
    if (device->subgroup_size() >= 8) blockings.push_back(Blocking::Lanes);
    const auto blocking_name = [&](Blocking blocking) {
        const char* name = blocking == Blocking::Lanes ? "lanes" : "tiled";
        return strfmt("%s%s", name, blocking == device_blocking(*device) ? ", used" : "");
    };
    for (Blocking kernel : blockings) {
        for (DType dtype : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K}) {
            if (k % block_size(dtype)) continue;
            VulkanBuffer w = weight_rows(rec, dtype, n, k);
            LinearShape shape{m, n, k, 0, 0, dtype};
            shape.blocking = kernel;
            const double t = timed(rec, [&] { linear(rec, x, w, nullptr, y, shape); });
            report(strfmt("linear %u x %u x %u, %s weight (%s)", m, n, k, dtype_name(dtype),
                          blocking_name(kernel).c_str())
                       .c_str(),
                   2.0 * m * n * k, t, peak);
        }
    }
    // conv2d: the UNet's 320-channel 3x3 at 64x64 (32x32 with --quick) and the VAE decoder's
    // 128-channel one at 512x512 (128x128).
    struct Conv {
        uint32_t c, hw;
    };
    for (const Conv cv : {Conv{320, quick ? 32u : 64u}, Conv{128, quick ? 128u : 512u}}) {
        const uint32_t c = cv.c, hw = cv.hw;
        VulkanBuffer cx = filled(rec, size_t(c) * hw * hw * 4, 0x3b);
        VulkanBuffer cy = filled(rec, size_t(c) * hw * hw * 4, 0);
        VulkanBuffer cw = weight_rows(rec, DType::F16, c, int64_t(c) * 9);
        Conv2dShape cs{1, c, hw, hw, c, 3, 3};
        cs.pad_h = cs.pad_w = 1;
        cs.weight = DType::F16;
        for (Blocking kernel : blockings) {
            cs.blocking = kernel;
            const double tc = timed(rec, [&] { conv2d(rec, cx, cw, nullptr, cy, cs); });
            report(strfmt("conv2d 3x3 %u -> %u at %ux%u, f16 (%s)", c, c, hw, hw,
                          blocking_name(kernel).c_str())
                       .c_str(),
                   2.0 * c * c * 9 * hw * hw, tc, peak);
        }
    }
    // Attention: SD 1.5's first self-attention (8 heads of 40, 4096 tokens; 1024 with --quick)
    // and a DiT's (24 heads of 128, 1024 tokens).
    struct Att {
        uint32_t heads, l, d;
    };
    for (const Att a : {Att{8, quick ? 1024u : 4096u, 40}, Att{24, 1024, 128}}) {
        const size_t bytes = size_t(a.heads) * a.l * a.d * 4;
        VulkanBuffer q = filled(rec, bytes, 0x3b), o = filled(rec, bytes, 0);
        const View4 v = contiguous_view4({1, a.heads, a.l, a.d});
        for (Blocking blocking : blockings) {
            AttentionShape shape{1, a.heads, a.l, a.l, a.d, a.d};
            shape.blocking = blocking;
            const double t =
                timed(rec, [&] { attention(rec, shape, q, v, q, v, q, v, nullptr, View4{}, o); });
            report(strfmt("attention %u heads x %u tokens x %u (%s)", a.heads, a.l, a.d,
                          blocking_name(blocking).c_str())
                       .c_str(),
                   4.0 * a.heads * double(a.l) * a.l * a.d, t, peak);
        }
    }
    const RecorderStats& st = rec.stats();
    std::printf("\n%lld submissions, %lld dispatches, %.1f MiB uploaded\n",
                static_cast<long long>(st.submissions), static_cast<long long>(st.dispatches),
                double(st.bytes_uploaded) / (1024.0 * 1024.0));
    return 0;
}

}  // namespace
}  // namespace sd::gpu

int main(int argc, char** argv) {
    try {
        return sd::gpu::run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sd-bench-vulkan: %s\n", e.what());
        return 1;
    }
}
