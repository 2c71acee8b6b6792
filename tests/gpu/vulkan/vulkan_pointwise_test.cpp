// The pointwise Vulkan kernels (unary.comp, binary.comp) against ops::ref on this machine's
// first Vulkan device: every activation and scalar op on strided views, the four arithmetic
// ops with torch's broadcasting, sizes past one dispatch row of workgroups.
//
// Tolerance: f32 arithmetic against the reference's double; GELU's erf is an approximation with
// a relative error below 1.2e-7.
#include <gtest/gtest.h>

#include <string>

#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_test_util.h"
#include "ops/activation.h"
#include "ops/elementwise.h"
#include "test_util.h"

namespace sd::gpu {
namespace {

// op(x) on the device for a tensor of any strides (a view of a bigger buffer).
Tensor run_unary(UnaryOp op, const Tensor& x, float a = 0, float b = 0) {
    CommandRecorder rec(test::first_vulkan_device());
    // The whole storage from the view's first element's storage start: the view keeps its
    // strides and offset into it.
    const Tensor base = Tensor::from_storage(
        x.storage(), 0, {int64_t(x.storage()->size() / sizeof(float))}, DType::F32);
    VulkanBuffer xb = test::device_buffer_of(rec, base.to_vector());
    VulkanBuffer yb = test::device_floats(rec, x.numel());
    unary(rec, op, xb, view4(x.shape(), x.strides(), x.offset()), yb, a, b);
    return test::read_back(rec, yb, x.shape());
}

TEST(VulkanUnary, EveryOpMatchesRefOnStridedViews) {
    const Tensor wide = test::random_tensor({3, 5, 40}, 1, -6.0f, 6.0f);
    const Tensor x = wide.narrow(2, 3, 33).transpose(0, 1);  // strided, offset 3
    ASSERT_FALSE(x.is_contiguous());
    const double atol = 1e-6, rtol = 2e-6;
    test::expect_close(run_unary(UnaryOp::Silu, x), ref::silu(x), atol, rtol, "silu");
    test::expect_close(run_unary(UnaryOp::Gelu, x), ref::gelu(x), atol, rtol, "gelu");
    test::expect_close(run_unary(UnaryOp::GeluTanh, x), ref::gelu(x, GeluApprox::Tanh), atol, rtol,
                       "gelu tanh");
    test::expect_close(run_unary(UnaryOp::QuickGelu, x), ref::quick_gelu(x), atol, rtol,
                       "quick_gelu");
    test::expect_close(run_unary(UnaryOp::Sigmoid, x), ref::sigmoid(x), atol, rtol, "sigmoid");
    test::expect_close(run_unary(UnaryOp::Tanh, x), ref::tanh(x), atol, rtol, "tanh");
    test::expect_close(run_unary(UnaryOp::Clamp, x, -1.5f, 2.0f), ref::clamp(x, -1.5f, 2.0f), 0, 0,
                       "clamp");
    test::expect_close(run_unary(UnaryOp::Scale, x, 0.37f), ref::scale(x, 0.37f), 0, 1e-7, "scale");
    test::expect_close(run_unary(UnaryOp::AddScalar, x, -2.5f), ref::add_scalar(x, -2.5f), 0, 1e-7,
                       "add_scalar");
}

TEST(VulkanUnary, MoreElementsThanOneRowOfWorkgroups) {
    // 65535 workgroups of 256 hold 16.8 M elements; 17 M spill into a second row.
    const Tensor x = test::random_tensor({17000000}, 2);
    test::expect_close(run_unary(UnaryOp::Silu, x), ref::silu(x), 1e-6, 2e-6, "17 M");
}

TEST(VulkanBinary, ArithmeticBroadcastsAsTorch) {
    auto device = test::first_vulkan_device();
    struct Case {
        Shape a, b;
    };
    const Case cases[] = {
        {{2, 3, 4, 5}, {2, 3, 4, 5}}, {{2, 3, 4, 5}, {5}}, {{2, 3, 4, 5}, {3, 1, 1}},
        {{1, 3, 1, 5}, {2, 1, 4, 1}}, {{7}, {1}},          {{65, 33}, {65, 1}}};
    const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div};
    uint32_t seed = 10;
    for (const Case& c : cases) {
        const Tensor a = test::random_tensor(c.a, seed++);
        const Tensor b = test::random_tensor(c.b, seed++, 0.5f, 2.0f);  // no division by ~0
        for (BinaryOp op : ops) {
            const Tensor want = op == BinaryOp::Add   ? ref::add(a, b)
                                : op == BinaryOp::Sub ? ref::sub(a, b)
                                : op == BinaryOp::Mul ? ref::mul(a, b)
                                                      : ref::div(a, b);
            uint32_t out[4] = {1, 1, 1, 1};
            const View4 wv = contiguous_view4(want.shape());
            std::copy(std::begin(wv.shape), std::end(wv.shape), out);
            CommandRecorder rec(device);
            VulkanBuffer ab = test::device_buffer_of(rec, a.to_vector());
            VulkanBuffer bb = test::device_buffer_of(rec, b.to_vector());
            VulkanBuffer yb = test::device_floats(rec, want.numel());
            binary(rec, op, ab, broadcast_view4(contiguous_view4(a.shape()), out), bb,
                   broadcast_view4(contiguous_view4(b.shape()), out), yb);
            test::expect_close(
                test::read_back(rec, yb, want.shape()), want, 0, 1e-7,
                a.describe() + " op " + std::to_string(int(op)) + " " + b.describe());
        }
    }
}

TEST(VulkanBinary, ShapesThatDoNotBroadcastAreNamed) {
    const uint32_t out[4] = {1, 1, 4, 5};
    try {
        broadcast_view4(contiguous_view4({3, 5}), out);
        ADD_FAILURE() << "[3, 5] broadcast to [4, 5]";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[1, 1, 3, 5] does not broadcast to [1, 1, 4, 5]"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(view4({1, 2, 3, 4, 5}, contiguous_strides({1, 2, 3, 4, 5})), Error);
}

}  // namespace
}  // namespace sd::gpu
