// The Vulkan conv2d (conv2d_DTYPE.comp: an implicit GEMM over gemm_common.glsl) against
// ops::ref::conv2d on this machine's first Vulkan device: the UNet's and VAE's shapes (3x3 with
// padding, stride 2 down, 1x1, the 2x upsampled read), odd sizes, a batch of 2, LeakyReLU,
// f16 / bf16 / q8_0 / q4_K weights dequantised in the shader.
#include <gtest/gtest.h>

#include <string>

#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_test_util.h"
#include "ops/conv.h"
#include "test_util.h"

namespace sd::gpu {
namespace {

struct Case {
    int64_t batch, channels, h, w, out_channels, kernel;
    int stride, pad;
    bool upsample2x, leaky_relu, bias;
    DType weight;
};

TEST(VulkanConv2d, MatchesRef) {
    auto device = test::first_vulkan_device();
    const Case cases[] = {
        {1, 4, 7, 9, 8, 3, 1, 1, false, false, true, DType::F32},
        {2, 5, 16, 12, 70, 3, 2, 1, false, false, true, DType::F32},
        {1, 16, 9, 9, 3, 1, 1, 0, false, false, false, DType::F32},
        {1, 6, 5, 7, 4, 3, 1, 1, true, false, true, DType::F32},
        {1, 3, 10, 10, 5, 3, 1, 1, false, true, true, DType::F32},
        {1, 32, 8, 8, 16, 3, 1, 1, false, false, true, DType::F16},
        {1, 32, 8, 8, 16, 3, 1, 1, false, false, true, DType::BF16},
        {1, 32, 6, 10, 20, 3, 1, 1, false, false, true, DType::Q8_0},
        {1, 256, 4, 4, 8, 1, 1, 0, false, false, true, DType::Q4_K},
    };
    uint32_t seed = 90;
    for (shaders::Blocking kernel : test::device_blockings()) {
        for (const Case& c : cases) {
            const Tensor x = test::random_tensor({c.batch, c.channels, c.h, c.w}, seed++);
            // The weight as its file has it: [O, C * KH * KW] rows (a block-quant tensor cannot be
            // viewed 4-d); the reference gets it dequantised, viewed [O, C, KH, KW].
            const Tensor w = test::random_weight(c.out_channels, c.channels * c.kernel * c.kernel,
                                                 c.weight, seed++);
            const Tensor b = c.bias ? test::random_tensor({c.out_channels}, seed++) : Tensor();
            Conv2dOptions o;
            o.stride_h = o.stride_w = c.stride;
            o.pad_h = o.pad_w = c.pad;
            o.upsample2x = c.upsample2x;
            o.leaky_relu = c.leaky_relu;
            o.negative_slope = 0.2f;
            const Tensor w_f32 =
                test::dequantized(w).view({c.out_channels, c.channels, c.kernel, c.kernel});
            const Tensor want = ref::conv2d(x, w_f32, b, o);

            CommandRecorder rec(device);
            VulkanBuffer xb = test::device_buffer_of(rec, x.to_vector());
            VulkanBuffer wb(device, w.nbytes(), VulkanBuffer::Memory::Device);
            rec.upload(wb, w.data_ptr(), w.nbytes());
            VulkanBuffer bb =
                test::device_buffer_of(rec, c.bias ? b.to_vector() : std::vector<float>{});
            VulkanBuffer yb = test::device_floats(rec, want.numel());
            Conv2dShape s{uint32_t(c.batch), uint32_t(c.channels),     uint32_t(c.h),
                          uint32_t(c.w),     uint32_t(c.out_channels), uint32_t(c.kernel),
                          uint32_t(c.kernel)};
            s.stride_h = s.stride_w = uint32_t(c.stride);
            s.pad_h = s.pad_w = uint32_t(c.pad);
            s.upsample2x = c.upsample2x;
            s.leaky_relu = c.leaky_relu;
            s.negative_slope = 0.2f;
            s.weight = c.weight;
            s.blocking = kernel;
            ASSERT_EQ(int64_t(s.out_h()), want.size(2));
            ASSERT_EQ(int64_t(s.out_w()), want.size(3));
            conv2d(rec, xb, wb, c.bias ? &bb : nullptr, yb, s);
            const int64_t k = c.channels * c.kernel * c.kernel;
            test::expect_close(test::read_back(rec, yb, want.shape()), want, 2e-6 * double(k), 1e-5,
                               x.describe() + " * " + w_f32.describe() + " " +
                                   dtype_name(c.weight) +
                                   (kernel == shaders::Blocking::Lanes ? " lanes" : " tiled"));
        }
    }
}

TEST(VulkanConv2d, MisfitShapesAreNamed) {
    auto device = test::first_vulkan_device();
    CommandRecorder rec(device);
    VulkanBuffer any = test::device_floats(rec, 4096);
    Conv2dShape s{1, 3, 2, 2, 4, 3, 3};  // a 3x3 kernel on 2x2 without padding
    try {
        conv2d(rec, any, any, nullptr, any, s);
        ADD_FAILURE() << "3x3 on 2x2 ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("a 3 x 3 kernel does not fit a 2 x 2 input"),
                  std::string::npos)
            << e.what();
    }
    s = Conv2dShape{1, 3, 8, 8, 4, 3, 3};
    s.weight = DType::Q8_0;  // K = 27, not whole blocks of 32
    try {
        conv2d(rec, any, any, nullptr, any, s);
        ADD_FAILURE() << "q8_0 with K = 27 ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("conv2d: K = 27 is not a whole number of q8_0"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sd::gpu
