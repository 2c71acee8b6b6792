// The Vulkan normalisations (norm.comp: group, layer and RMS norm, softmax) against ops::ref
// on this machine's first Vulkan device: rows shorter and longer than a workgroup, with and
// without weight and bias, group norm's SiLU, rows past one dispatch row of workgroups.
//
// Tolerance: f32 sums in a tree against the reference's double sums: 2e-5 of the output's
// scale (unit variance) at the lengths here (up to 20,000 elements a row).
#include <gtest/gtest.h>

#include <string>

#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_test_util.h"
#include "ops/activation.h"
#include "ops/norm.h"
#include "test_util.h"

namespace sd::gpu {
namespace {

constexpr double kTol = 2e-5;

// A buffer of the tensor's values, or none for an undefined tensor.
std::unique_ptr<VulkanBuffer> optional_buffer(CommandRecorder& rec, const Tensor& t) {
    if (!t.defined()) return nullptr;
    return std::make_unique<VulkanBuffer>(test::device_buffer_of(rec, t.to_vector()));
}

TEST(VulkanNorm, GroupNormMatchesRef) {
    auto device = test::first_vulkan_device();
    struct Case {
        int64_t batch, channels, h, w, groups;
        bool affine, silu;
    };
    const Case cases[] = {{1, 32, 8, 8, 32, true, false},
                          {2, 64, 5, 7, 32, true, true},
                          {1, 6, 3, 3, 2, false, false},
                          {2, 320, 16, 16, 32, true, true},
                          {1, 4, 100, 200, 1, true, false}};
    uint32_t seed = 20;
    for (const Case& c : cases) {
        const Tensor x = test::random_tensor({c.batch, c.channels, c.h, c.w}, seed++, -2.0f, 3.0f);
        const Tensor w = c.affine ? test::random_tensor({c.channels}, seed++) : Tensor();
        const Tensor b = c.affine ? test::random_tensor({c.channels}, seed++) : Tensor();
        const Tensor want = ref::group_norm(x, c.groups, w, b, 1e-5f, c.silu);
        CommandRecorder rec(device);
        VulkanBuffer xb = test::device_buffer_of(rec, x.to_vector());
        auto wb = optional_buffer(rec, w), bb = optional_buffer(rec, b);
        VulkanBuffer yb = test::device_floats(rec, x.numel());
        group_norm(rec, xb, yb, uint32_t(c.batch), uint32_t(c.channels), uint32_t(c.h * c.w),
                   uint32_t(c.groups), wb.get(), bb.get(), 1e-5f, c.silu);
        test::expect_close(test::read_back(rec, yb, x.shape()), want, kTol, kTol,
                           x.describe() + " groups " + std::to_string(c.groups));
    }
}

TEST(VulkanNorm, LayerAndRmsNormAndSoftmaxMatchRef) {
    auto device = test::first_vulkan_device();
    uint32_t seed = 40;
    // Rows of 1 to 3072, and 65,600 rows: more workgroups than one dispatch row holds.
    const int64_t cases[][2] = {{1, 1},   {1, 7},   {5, 7},    {1, 256},
                                {5, 256}, {5, 300}, {3, 3072}, {65600, 2}};
    for (const auto& [rows, n] : cases) {
        {
            const Tensor x = test::random_tensor({rows, n}, seed++, -4.0f, 4.0f);
            const Tensor w = test::random_tensor({n}, seed++);
            const Tensor b = test::random_tensor({n}, seed++);
            const std::string tag = x.describe();
            CommandRecorder rec(device);
            VulkanBuffer xb = test::device_buffer_of(rec, x.to_vector());
            VulkanBuffer wb = test::device_buffer_of(rec, w.to_vector());
            VulkanBuffer bb = test::device_buffer_of(rec, b.to_vector());
            VulkanBuffer y1 = test::device_floats(rec, x.numel());
            VulkanBuffer y2 = test::device_floats(rec, x.numel());
            VulkanBuffer y3 = test::device_floats(rec, x.numel());
            VulkanBuffer y4 = test::device_floats(rec, x.numel());
            layer_norm(rec, xb, y1, uint32_t(rows), uint32_t(n), &wb, &bb, 1e-5f);
            layer_norm(rec, xb, y2, uint32_t(rows), uint32_t(n), nullptr, nullptr, 1e-6f);
            rms_norm(rec, xb, y3, uint32_t(rows), uint32_t(n), &wb, 1e-6f);
            softmax(rec, xb, y4, uint32_t(rows), uint32_t(n));
            Tensor g1 = Tensor::empty(x.shape()), g2 = Tensor::empty(x.shape()),
                   g3 = Tensor::empty(x.shape()), g4 = Tensor::empty(x.shape());
            const size_t bytes = size_t(x.numel()) * sizeof(float);
            rec.download(y1, g1.data<float>(), bytes);
            rec.download(y2, g2.data<float>(), bytes);
            rec.download(y3, g3.data<float>(), bytes);
            rec.download(y4, g4.data<float>(), bytes);
            rec.submit();
            EXPECT_EQ(rec.stats().submissions, 1);
            test::expect_close(g1, ref::layer_norm(x, w, b, 1e-5f), kTol, kTol, tag + " layer");
            test::expect_close(g2, ref::layer_norm(x, Tensor(), Tensor(), 1e-6f), kTol, kTol,
                               tag + " layer, no affine");
            test::expect_close(g3, ref::rms_norm(x, w, 1e-6f), kTol, kTol, tag + " rms");
            test::expect_close(g4, ref::softmax(x), 1e-7, kTol, tag + " softmax");
        }
    }
}

TEST(VulkanNorm, GroupsThatDoNotDivideTheChannelsAreNamed) {
    auto device = test::first_vulkan_device();
    CommandRecorder rec(device);
    VulkanBuffer x = test::device_floats(rec, 64);
    try {
        group_norm(rec, x, x, 1, 6, 4, 4, nullptr, nullptr, 1e-5f);
        ADD_FAILURE() << "4 groups of 6 channels ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("4 groups do not divide 6 channels"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(layer_norm(rec, x, x, 2, 64, nullptr, nullptr, 1e-5f), Error);  // 128 > 64 floats
}

}  // namespace
}  // namespace sd::gpu
