// The Vulkan linear kernels (shaders/linear_DTYPE.comp in both blockings, gemm_tiled.glsl and
// gemm_lanes.glsl) against ref::linear on this machine's first Vulkan device (Mesa's lavapipe
// in CI): odd sizes on every tile edge, with and without bias, strided rows in and out.
//
// Tolerance: the shader sums K f32 products with fma in k order, the reference in double;
// values in [-1, 1] keep the difference within 2e-6 * K absolute plus 1e-5 relative.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_test_util.h"
#include "ops/linear.h"
#include "test_util.h"

namespace sd::gpu {
namespace {

using shaders::Blocking;

const char* kernel_name(Blocking kernel) {
    return kernel == Blocking::Lanes ? "lanes" : "tiled";
}

double atol_for(int64_t k) {
    return 2e-6 * static_cast<double>(std::max<int64_t>(k, 1));
}

TEST(VulkanLinear, MatchesRefOnOddSizes) {
    auto device = test::first_vulkan_device();
    const int64_t sizes[] = {1, 3, 8, 9, 63, 64, 65, 100, 129};
    uint32_t seed = 1;
    for (Blocking kernel : test::device_blockings()) {
        for (int64_t m : sizes) {
            for (int64_t n : sizes) {
                for (int64_t k : {int64_t(1), int64_t(15), int64_t(17), int64_t(64), int64_t(130),
                                  int64_t(136)}) {
                    const bool with_bias = seed % 2;
                    const Tensor x = test::random_tensor({m, k}, seed++);
                    const Tensor w = test::random_tensor({n, k}, seed++);
                    const Tensor b = with_bias ? test::random_tensor({n}, seed++) : Tensor();
                    const Tensor want = ref::linear(x, w, b);

                    CommandRecorder rec(device);
                    VulkanBuffer xb = test::device_buffer_of(rec, x.to_vector());
                    VulkanBuffer wb = test::device_buffer_of(rec, w.to_vector());
                    VulkanBuffer bb = test::device_buffer_of(
                        rec, with_bias ? b.to_vector() : std::vector<float>(1));
                    VulkanBuffer yb(device, size_t(m * n) * sizeof(float),
                                    VulkanBuffer::Memory::Device);
                    LinearShape shape{uint32_t(m), uint32_t(n), uint32_t(k)};
                    shape.blocking = kernel;
                    linear(rec, xb, wb, with_bias ? &bb : nullptr, yb, shape);
                    Tensor got = Tensor::empty({m, n});
                    rec.download(yb, got.data<float>(), size_t(m * n) * sizeof(float));
                    rec.submit();
                    test::expect_close(got, want, atol_for(k), 1e-5,
                                       std::string(kernel_name(kernel)) +
                                           " M=" + std::to_string(m) + " N=" + std::to_string(n) +
                                           " K=" + std::to_string(k) + (with_bias ? " bias" : ""));
                }
            }
        }
    }
}

TEST(VulkanLinear, EveryWeightDtypeIsDequantisedInTheShader) {
    // The weight's GGUF bytes go to the device as they are; the reference runs on the same
    // weight dequantised on the host. Two super-blocks of K and rows past a tile edge.
    auto device = test::first_vulkan_device();
    const DType dtypes[] = {DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                            DType::Q4_K, DType::Q5_K, DType::Q6_K};
    uint32_t seed = 300;
    for (Blocking kernel : test::device_blockings()) {
        for (DType dtype : dtypes) {
            // f16 and bf16 also on rows of part texels (K = 36: value by value, a part chunk
            // at the end) and on a K of whole chunks but not of 256 (40).
            std::vector<int64_t> ks = {256, 512};
            if (block_size(dtype) == 1) ks.insert(ks.end(), {36, 40});
            for (int64_t k : ks) {
                const int64_t m = 19, n = 67;
                const Tensor x = test::random_tensor({m, k}, seed++);
                const Tensor w = test::random_weight(n, k, dtype, seed++);
                const Tensor b = test::random_tensor({n}, seed++);
                const Tensor want = ref::linear(x, test::dequantized(w), b);

                CommandRecorder rec(device);
                VulkanBuffer xb = test::device_buffer_of(rec, x.to_vector());
                VulkanBuffer wb(device, w.nbytes(), VulkanBuffer::Memory::Device);
                rec.upload(wb, w.data_ptr(), w.nbytes());
                VulkanBuffer bb = test::device_buffer_of(rec, b.to_vector());
                VulkanBuffer yb(device, size_t(m * n) * sizeof(float),
                                VulkanBuffer::Memory::Device);
                LinearShape shape{uint32_t(m), uint32_t(n), uint32_t(k), 0, 0, dtype};
                shape.blocking = kernel;
                linear(rec, xb, wb, &bb, yb, shape);
                Tensor got = Tensor::empty({m, n});
                rec.download(yb, got.data<float>(), size_t(m * n) * sizeof(float));
                rec.submit();
                test::expect_close(got, want, atol_for(k), 1e-5,
                                   std::string(kernel_name(kernel)) + " " + dtype_name(dtype) +
                                       " K=" + std::to_string(k));
            }
        }
    }
    // A dtype without a shader and a K of part of a block are named.
    CommandRecorder rec(device);
    VulkanBuffer any(device, 4096, VulkanBuffer::Memory::Device);
    try {
        linear(rec, any, any, nullptr, any, {1, 1, 256, 0, 0, DType::Q2_K});
        ADD_FAILURE() << "q2_K ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no shader for q2_K weights"), std::string::npos)
            << e.what();
    }
    try {
        linear(rec, any, any, nullptr, any, {1, 1, 100, 0, 0, DType::Q8_0});
        ADD_FAILURE() << "K = 100 of q8_0 ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("K = 100 is not a whole number of q8_0 blocks"),
                  std::string::npos)
            << e.what();
    }
}

TEST(VulkanLinear, StridedRowsMatchRef) {
    // x rows 40 floats apart (K = 33), y rows 50 apart (N = 37): the gaps keep their values.
    auto device = test::first_vulkan_device();
    const int64_t m = 70, n = 37, k = 33, xs = 40, ys = 50;
    const Tensor wide_x = test::random_tensor({m, xs}, 7);
    const Tensor x = wide_x.narrow(1, 0, k);
    const Tensor w = test::random_tensor({n, k}, 8);
    const Tensor b = test::random_tensor({n}, 9);
    const Tensor want = ref::linear(x, w, b);

    for (Blocking kernel : test::device_blockings()) {
        CommandRecorder rec(device);
        VulkanBuffer xb = test::device_buffer_of(rec, wide_x.to_vector());
        VulkanBuffer wb = test::device_buffer_of(rec, w.to_vector());
        VulkanBuffer bb = test::device_buffer_of(rec, b.to_vector());
        std::vector<float> y(size_t(m * ys), -7.0f);
        VulkanBuffer yb = test::device_buffer_of(rec, y);
        LinearShape shape{uint32_t(m), uint32_t(n), uint32_t(k), uint32_t(xs), uint32_t(ys)};
        shape.blocking = kernel;
        linear(rec, xb, wb, &bb, yb, shape);
        rec.download(yb, y.data(), y.size() * sizeof(float));
        rec.submit();
        Tensor got = Tensor::empty({m, n});
        int64_t gaps_changed = 0;
        for (int64_t r = 0; r < m; ++r) {
            std::memcpy(got.data<float>() + r * n, y.data() + r * ys, size_t(n) * sizeof(float));
            for (int64_t c = n; c < ys; ++c) gaps_changed += y[size_t(r * ys + c)] != -7.0f;
        }
        test::expect_close(got, want, atol_for(k), 1e-5,
                           std::string("strided, ") + kernel_name(kernel));
        EXPECT_EQ(gaps_changed, 0) << kernel_name(kernel);
    }
}

TEST(CommandRecorder, AChainOfOpsIsOneSubmission) {
    // Ten linears, each reading the one before: one submission, ten dispatches, the bytes
    // uploaded and downloaded counted, the result the reference's chain.
    auto device = test::first_vulkan_device();
    const int64_t m = 20, d = 48;
    Tensor h = test::random_tensor({m, d}, 11);
    std::vector<Tensor> weights;
    for (int i = 0; i < 10; ++i)
        weights.push_back(test::random_tensor({d, d}, 100 + i, -0.2f, 0.2f));

    CommandRecorder rec(device);
    VulkanBuffer a = test::device_buffer_of(rec, h.to_vector());
    VulkanBuffer b(device, a.size(), VulkanBuffer::Memory::Device);
    std::vector<VulkanBuffer> wb;
    for (const Tensor& w : weights) wb.push_back(test::device_buffer_of(rec, w.to_vector()));
    VulkanBuffer* in = &a;
    VulkanBuffer* out = &b;
    for (int i = 0; i < 10; ++i) {
        linear(rec, *in, wb[size_t(i)], nullptr, *out, {uint32_t(m), uint32_t(d), uint32_t(d)});
        std::swap(in, out);
        h = ref::linear(h, weights[size_t(i)]);
    }
    Tensor got = Tensor::empty({m, d});
    rec.download(*in, got.data<float>(), a.size());
    EXPECT_EQ(rec.stats().submissions, 0);  // nothing runs before submit()
    rec.submit();
    test::expect_close(got, h, atol_for(d) * 10, 1e-4, "chain");
    EXPECT_EQ(rec.stats().submissions, 1);
    EXPECT_EQ(rec.stats().dispatches, 10);
    EXPECT_EQ(rec.stats().bytes_uploaded, int64_t((m * d + 10 * d * d) * sizeof(float)));
    EXPECT_EQ(rec.stats().bytes_downloaded, int64_t(m * d * sizeof(float)));
    rec.submit();  // nothing recorded: no submission
    EXPECT_EQ(rec.stats().submissions, 1);
}

TEST(CommandRecorder, SdVulkanProfileTimesEachShader) {
    // With SD_VULKAN_PROFILE set, every step of a submission is timed and summed by name.
    auto device = test::first_vulkan_device();
    if (device->timestamp_ns() <= 0) GTEST_SKIP() << "no timestamps on " << device->name();
    ::setenv("SD_VULKAN_PROFILE", "1", 1);
    CommandRecorder rec(device);
    ::unsetenv("SD_VULKAN_PROFILE");
    ASSERT_NE(rec.profile(), nullptr);
    const Tensor x = test::random_tensor({64, 64}, 3);
    VulkanBuffer a = test::device_buffer_of(rec, x.to_vector());
    VulkanBuffer b(device, a.size(), VulkanBuffer::Memory::Device);
    for (int i = 0; i < 3; ++i) linear(rec, a, a, nullptr, b, {64, 64, 64});
    rec.submit();
    const std::string table = rec.profile()->table();
    const std::string name =
        device_blocking(*device) == Blocking::Lanes ? "linear_f32_lanes" : "linear_f32";
    EXPECT_NE(table.find(name), std::string::npos) << table;
    EXPECT_NE(table.find(" 3 calls"), std::string::npos) << table;
    EXPECT_NE(table.find("upload"), std::string::npos) << table;
    EXPECT_EQ(CommandRecorder(device).profile(), nullptr);  // unset: no profile
}

TEST(VulkanLinear, BuffersTooSmallAreNamedAndTheRecorderGoesOn) {
    auto device = test::first_vulkan_device();
    CommandRecorder rec(device);
    VulkanBuffer x(device, 16 * sizeof(float), VulkanBuffer::Memory::Device);
    VulkanBuffer w(device, 16 * sizeof(float), VulkanBuffer::Memory::Device);
    VulkanBuffer y(device, 3 * sizeof(float), VulkanBuffer::Memory::Device);
    try {
        linear(rec, x, w, nullptr, y, {2, 2, 4});
        ADD_FAILURE() << "a 3-float y took a 2 x 2 result";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("y needs 16 bytes, its buffer has 12"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(linear(rec, x, w, nullptr, y, {1, 3, 4, 2}), Error);  // stride < K
    std::vector<float> ones(16, 1.0f);
    rec.upload(x, ones.data(), 64);
    rec.upload(w, ones.data(), 64);
    linear(rec, x, w, nullptr, y, {1, 3, 4});
    float out[3] = {};
    rec.download(y, out, sizeof(out));
    rec.submit();
    EXPECT_EQ(out[0], 4.0f);
    EXPECT_EQ(out[2], 4.0f);
    EXPECT_THROW(rec.upload(y, ones.data(), 16, 4), Error);  // past the end
}

TEST(VulkanLinear, ACpuDeviceRunsTheLanesShaders) {
    // lavapipe is a CPU-class device: the blocking without barriers is its own, and a device
    // without 8-lane subgroups is named when asked for it.
    auto device = test::first_vulkan_device();
    const bool lanes = device->cpu() && device->subgroup_size() >= 8;
    EXPECT_EQ(device_blocking(*device), lanes ? Blocking::Lanes : Blocking::Tiled)
        << "subgroup size " << device->subgroup_size();
    if (device->cpu()) {
        EXPECT_GE(device->subgroup_size(), 4u);
    }
    if (device->subgroup_size() < 8)
        EXPECT_THROW(blocking_for(*device, Blocking::Lanes), Error);
    else
        EXPECT_EQ(blocking_for(*device, Blocking::Lanes), Blocking::Lanes);
    EXPECT_EQ(blocking_for(*device, std::nullopt), device_blocking(*device));
}

TEST(VulkanDevice, AnUnknownDeviceIsNamedWithTheDevicesThereAre) {
    ASSERT_FALSE(vulkan_devices().devices.empty()) << vulkan_devices().unavailable;
    try {
        VulkanDevice::open("vulkan9");
        ADD_FAILURE() << "vulkan9 opened";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("'vulkan9' does not exist"), std::string::npos) << m;
        EXPECT_NE(m.find("vulkan0"), std::string::npos) << m;
    }
    // Names are read in any case, as the reference's "Vulkan0".
    EXPECT_EQ(VulkanDevice::open("Vulkan0")->name(), "vulkan0");
    EXPECT_NE(vulkan_devices().devices[0].description.find("Vulkan 1."), std::string::npos)
        << vulkan_devices().devices[0].description;
    // Read again for placement: the same devices, free memory within the heaps (none where
    // the device has no VK_EXT_memory_budget, as lavapipe in Mesa 22.3).
    const DeviceList now = vulkan_devices_with_free_memory();
    ASSERT_EQ(now.devices.size(), vulkan_devices().devices.size());
    for (size_t i = 0; i < now.devices.size(); ++i) {
        EXPECT_EQ(now.devices[i].name, vulkan_devices().devices[i].name);
        if (now.devices[i].free_bytes) {
            EXPECT_LE(*now.devices[i].free_bytes, now.devices[i].device_local_bytes);
        }
    }
}

TEST(VulkanDevice, MemoryBeyondTheDeviceIsAnErrorNamingIt) {
    auto device = test::first_vulkan_device();
    const uint64_t too_much = vulkan_devices().devices[0].device_local_bytes * 4 + (1ull << 40);
    try {
        VulkanBuffer b(device, too_much, VulkanBuffer::Memory::Device);
        ADD_FAILURE() << "a buffer of " << too_much << " bytes was made";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("vulkan0"), std::string::npos) << e.what();
    }
    // The device keeps working.
    VulkanBuffer small(device, 64, VulkanBuffer::Memory::Device);
    EXPECT_EQ(small.size(), 64u);
}

}  // namespace
}  // namespace sd::gpu
