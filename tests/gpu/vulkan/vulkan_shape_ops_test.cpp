// The Vulkan copies (unary.comp's copy into a view: permute, concat) and rope.comp against
// ops::ref on this machine's first Vulkan device. RoPE has no op of its own on the CPU (the
// attention kernel rotates q and k as it loads them), so the device's rope followed by its
// attention is checked against ref::scaled_dot_product_attention with the same table.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_test_util.h"
#include "ops/attention.h"
#include "ops/shape_ops.h"
#include "test_util.h"

namespace sd::gpu {
namespace {

TEST(VulkanCopy, APermutedViewCopiesAsItsPackedCopy) {
    auto device = test::first_vulkan_device();
    const Tensor x = test::random_tensor({2, 3, 5, 7}, 100);
    const Tensor p = x.permute({0, 2, 1, 3});  // [2, 5, 3, 7]
    CommandRecorder rec(device);
    VulkanBuffer xb = test::device_buffer_of(rec, x.to_vector());
    VulkanBuffer yb = test::device_floats(rec, x.numel());
    unary(rec, UnaryOp::Copy, xb, view4(p.shape(), p.strides(), p.offset()), yb);
    test::expect_close(test::read_back(rec, yb, p.shape()), p.contiguous(), 0, 0, "permute");
}

TEST(VulkanCopy, ConcatMatchesRefOnEveryDim) {
    auto device = test::first_vulkan_device();
    uint32_t seed = 110;
    for (int dim = 0; dim < 4; ++dim) {
        Shape a{2, 3, 4, 5}, b{2, 3, 4, 5}, c{2, 3, 4, 5};
        a[dim] = 1;
        b[dim] = 3;
        c[dim] = 2;
        const Tensor ta = test::random_tensor(a, seed++), tb = test::random_tensor(b, seed++),
                     tc = test::random_tensor(c, seed++);
        const Tensor want = ref::concat({ta, tb, tc}, dim);
        CommandRecorder rec(device);
        VulkanBuffer ab = test::device_buffer_of(rec, ta.to_vector());
        VulkanBuffer bb = test::device_buffer_of(rec, tb.to_vector());
        VulkanBuffer cb = test::device_buffer_of(rec, tc.to_vector());
        VulkanBuffer yb = test::device_floats(rec, want.numel());
        concat(rec,
               {{&ab, contiguous_view4(a)}, {&bb, contiguous_view4(b)}, {&cb, contiguous_view4(c)}},
               dim, yb);
        test::expect_close(test::read_back(rec, yb, want.shape()), want, 0, 0,
                           "concat along " + std::to_string(dim));
    }
    CommandRecorder rec(device);
    VulkanBuffer any = test::device_floats(rec, 64);
    EXPECT_THROW(
        concat(rec, {{&any, contiguous_view4({2, 3})}, {&any, contiguous_view4({3, 3})}}, 3, any),
        Error);  // they differ in dim 2 as well
}

TEST(VulkanRope, RotatedQAndKGiveRefsAttentionWithTheTable) {
    auto device = test::first_vulkan_device();
    const int64_t b = 1, h = 3, l = 37, d = 64;
    const Tensor q = test::random_tensor({b, l, h, d}, 120).transpose(1, 2);
    const Tensor k = test::random_tensor({b, l, h, d}, 121).transpose(1, 2);
    const Tensor v = test::random_tensor({b, h, l, d}, 122);
    // (cos, sin) of l * theta_p: a table as nn/rope makes, with one row more than needed.
    Tensor table = Tensor::empty({l + 1, d / 2, 2});
    for (int64_t i = 0; i <= l; ++i)
        for (int64_t p = 0; p < d / 2; ++p) {
            const double angle = double(i) * std::pow(10000.0, -2.0 * double(p) / double(d));
            table.data<float>()[(i * (d / 2) + p) * 2] = float(std::cos(angle));
            table.data<float>()[(i * (d / 2) + p) * 2 + 1] = float(std::sin(angle));
        }
    AttentionOptions options;
    options.rope = table;
    const Tensor want = ref::scaled_dot_product_attention(q, k, v, Tensor(), options);

    CommandRecorder rec(device);
    const auto whole = [&](const Tensor& t) {
        return test::device_buffer_of(
            rec, Tensor::from_storage(t.storage(), 0,
                                      {int64_t(t.storage()->size() / sizeof(float))}, DType::F32)
                     .to_vector());
    };
    VulkanBuffer qb = whole(q), kb = whole(k), vb = whole(v), tb = whole(table);
    VulkanBuffer qr = test::device_floats(rec, q.numel()), kr = test::device_floats(rec, k.numel());
    rope(rec, qb, view4(q.shape(), q.strides(), q.offset()), tb, uint32_t(l + 1), qr);
    rope(rec, kb, view4(k.shape(), k.strides(), k.offset()), tb, uint32_t(l + 1), kr);
    const View4 heads = contiguous_view4({b, h, l, d});
    VulkanBuffer out = test::device_floats(rec, want.numel());
    attention(rec, {uint32_t(b), uint32_t(h), uint32_t(l), uint32_t(l), uint32_t(d), uint32_t(d)},
              qr, heads, kr, heads, vb, heads, nullptr, View4{}, out);
    test::expect_close(test::read_back(rec, out, want.shape()), want, 2e-6, 1e-5, "rope");
    EXPECT_EQ(rec.stats().submissions, 1);
    EXPECT_EQ(rec.stats().dispatches, 3);

    EXPECT_THROW(rope(rec, qb, contiguous_view4({1, 1, 4, 7}), tb, uint32_t(l + 1), qr), Error);
}

}  // namespace
}  // namespace sd::gpu
