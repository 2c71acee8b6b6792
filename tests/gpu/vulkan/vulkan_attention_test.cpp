// The Vulkan attention (attention_d128.comp, attention_d512.comp) against
// ops::ref::scaled_dot_product_attention on this machine's first Vulkan device: head widths of
// the families (40, 64, 80, 128, 160, the VAE's 512) and v wider or narrower than q, Lq != Lk,
// queries past a workgroup, strided q/k/v (the [B, L, H, D] layout models transpose), causal, a
// broadcast additive mask with -inf, a query whose keys are all masked.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_test_util.h"
#include "ops/attention.h"
#include "test_util.h"

namespace sd::gpu {
namespace {

// Runs attention on the device for q, k, v of any strides (views over their storages).
using shaders::Blocking;

Tensor run_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                     bool causal, Blocking blocking) {
    CommandRecorder rec(test::first_vulkan_device());
    const auto whole = [&](const Tensor& t) {
        return test::device_buffer_of(
            rec, Tensor::from_storage(t.storage(), 0,
                                      {int64_t(t.storage()->size() / sizeof(float))}, DType::F32)
                     .to_vector());
    };
    VulkanBuffer qb = whole(q), kb = whole(k), vb = whole(v);
    std::unique_ptr<VulkanBuffer> mb;
    View4 mv;
    if (mask.defined()) {
        mb = std::make_unique<VulkanBuffer>(whole(mask));
        mv = view4(mask.shape(), mask.strides(), mask.offset());
    }
    const Shape out{q.size(0), q.size(1), q.size(2), v.size(3)};
    VulkanBuffer ob = test::device_floats(rec, out.numel());
    AttentionShape s{uint32_t(q.size(0)), uint32_t(q.size(1)), uint32_t(q.size(2)),
                     uint32_t(k.size(2)), uint32_t(q.size(3)), uint32_t(v.size(3))};
    s.causal = causal;
    s.blocking = blocking;
    attention(rec, s, qb, view4(q.shape(), q.strides(), q.offset()), kb,
              view4(k.shape(), k.strides(), k.offset()), vb,
              view4(v.shape(), v.strides(), v.offset()), mb.get(), mv, ob);
    return test::read_back(rec, ob, out);
}

// [B, L, H, D] values viewed as [B, H, L, D], as a model's heads are.
Tensor heads_view(int64_t b, int64_t h, int64_t l, int64_t d, uint32_t seed) {
    return test::random_tensor({b, l, h, d}, seed).transpose(1, 2);
}

TEST(VulkanAttention, HeadWidthsOfTheFamiliesMatchRef) {
    struct Case {
        int64_t b, h, lq, lk, d, dv;
    };
    const Case cases[] = {
        {2, 8, 77, 77, 40, 40},     {1, 4, 130, 77, 64, 64},  {1, 2, 65, 200, 80, 80},
        {1, 3, 100, 100, 128, 128}, {1, 2, 70, 33, 160, 160}, {1, 1, 96, 96, 512, 512},
        {1, 2, 5, 9, 32, 48},       {1, 2, 40, 50, 64, 300},  {1, 1, 9, 9, 130, 20}};
    uint32_t seed = 60;
    for (Blocking blocking : test::device_blockings()) {
        for (const Case& c : cases) {
            const Tensor q = heads_view(c.b, c.h, c.lq, c.d, seed++);
            const Tensor k = heads_view(c.b, c.h, c.lk, c.d, seed++);
            const Tensor v = heads_view(c.b, c.h, c.lk, c.dv, seed++);
            if (c.h > 1) {
                ASSERT_FALSE(q.is_contiguous());
            }
            test::expect_close(run_attention(q, k, v, Tensor(), false, blocking),
                               ref::scaled_dot_product_attention(q, k, v), 2e-6, 1e-5,
                               q.describe() + " x " + k.describe() +
                                   (blocking == Blocking::Lanes ? " lanes" : " tiled"));
        }
    }
}

TEST(VulkanAttention, CausalAndMaskedMatchRef) {
    for (Blocking blocking : test::device_blockings()) {
        const std::string name = blocking == Blocking::Lanes ? " lanes" : " tiled";
        const Tensor q = test::random_tensor({1, 2, 70, 64}, 80);
        const Tensor k = test::random_tensor({1, 2, 90, 64}, 81);
        const Tensor v = test::random_tensor({1, 2, 90, 64}, 82);
        AttentionOptions causal;
        causal.causal = true;
        test::expect_close(run_attention(q, k, v, Tensor(), true, blocking),
                           ref::scaled_dot_product_attention(q, k, v, Tensor(), causal), 2e-6, 1e-5,
                           "causal" + name);

        // [1, 1, Lq, Lk], broadcast over batch and heads: a -inf band, and query 3 fully masked.
        Tensor mask = test::random_tensor({1, 1, 70, 90}, 83, -2.0f, 2.0f);
        float* m = mask.data<float>();
        for (int64_t i = 0; i < 70; ++i)
            for (int64_t j = 0; j < 90; ++j)
                if ((i + j) % 7 == 0 || i == 3) m[i * 90 + j] = -INFINITY;
        const Tensor want = ref::scaled_dot_product_attention(q, k, v, mask);
        const Tensor got = run_attention(q, k, v, mask, false, blocking);
        test::expect_close(got, want, 2e-6, 1e-5, "masked" + name);
        for (int64_t c = 0; c < 64; ++c) EXPECT_EQ(got.data<float>()[3 * 64 + c], 0.0f) << name;
    }
}

TEST(VulkanAttention, MisfitShapesAreNamed) {
    auto device = test::first_vulkan_device();
    CommandRecorder rec(device);
    VulkanBuffer any = test::device_floats(rec, 1 << 16);
    const View4 q = contiguous_view4({1, 1, 8, 1024});
    try {
        attention(rec, {1, 1, 8, 8, 1024, 1024}, any, q, any, q, any, q, nullptr, View4{}, any);
        ADD_FAILURE() << "heads of 1024 ran";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("heads of 1024 are wider than its 512"),
                  std::string::npos)
            << e.what();
    }
    const View4 small = contiguous_view4({1, 1, 8, 64});
    try {
        attention(rec, {1, 1, 8, 9, 64, 64}, any, small, any, small, any, small, nullptr, View4{},
                  any);
        ADD_FAILURE() << "k of 8 rows ran as 9";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("k is [1, 1, 8, 64], want [1, 1, 9, 64]"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sd::gpu
