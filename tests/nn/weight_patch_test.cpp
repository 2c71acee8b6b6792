// Layer patches: a Linear / Conv2d with a low-rank term or a dense delta computes what the
// same layer with the merged weight computes; without an active set nothing changes.
#include "nn/weight_patch.h"

#include <gtest/gtest.h>

#include "nn/layers.h"
#include "ops/ops.h"
#include "test_util.h"

namespace sd {
namespace {

using test::random_tensor;

float max_diff(const Tensor& a, const Tensor& b) {
    const std::vector<float> x = a.to_vector(), y = b.to_vector();
    float m = 0;
    for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
    return m;
}

TEST(WeightPatch, LinearLowRankTermEqualsTheMergedWeight) {
    Linear l;
    l.weight = random_tensor({6, 5}, 1);
    l.bias = random_tensor({6}, 2);
    l.name = "blk.fc.weight";
    const Tensor x = random_tensor({2, 3, 5}, 3);
    const Tensor base = l.forward(x);
    LowRankTerm t{random_tensor({2, 5}, 4), {}, random_tensor({6, 2}, 5), 0.75f};
    WeightPatches set;
    set["blk.fc.weight"].terms.push_back(t);
    const Tensor merged_weight = l.weight + matmul(t.up, t.down) * 0.75f;
    {
        const ScopedWeightPatches active(&set);
        const Tensor y = l.forward(x);
        EXPECT_LT(max_diff(y, linear(x, merged_weight, l.bias)), 1e-5f);
        EXPECT_GT(max_diff(y, base), 1e-3f);
        set["blk.fc.weight"].terms.clear();
        set["blk.fc.weight"].deltas.push_back(matmul(t.up, t.down) * 0.75f);
        EXPECT_LT(max_diff(l.forward(x), linear(x, merged_weight, l.bias)), 1e-5f);
        set["blk.fc.weight"].deltas.clear();
        set["blk.fc.weight"].weight = merged_weight;
        EXPECT_EQ(l.forward(x).to_vector(), linear(x, merged_weight, l.bias).to_vector());
    }
    EXPECT_EQ(l.forward(x).to_vector(), base.to_vector());  // the set is gone
    EXPECT_EQ(active_patch("blk.fc.weight"), nullptr);
}

TEST(WeightPatch, ConvTermsFollowTheLayersStrideAndPadding) {
    for (int stride : {1, 2}) {
        Conv2d c;
        c.weight = random_tensor({4, 3, 3, 3}, 10);
        c.bias = random_tensor({4}, 11);
        c.options.stride_h = c.options.stride_w = stride;
        c.options.pad_h = c.options.pad_w = 1;
        c.name = "conv.weight";
        const Tensor x = random_tensor({1, 3, 7, 7}, 12);
        // plain: 3x3 down, 1x1 up
        LowRankTerm plain{
            random_tensor({2, 3, 3, 3}, 13), {}, random_tensor({4, 2, 1, 1}, 14), 0.5f};
        Tensor dense =
            matmul(plain.up.view({4, 2}), plain.down.view({2, 27})).view({4, 3, 3, 3}) * 0.5f;
        // Tucker: 1x1 down, 3x3 core, 1x1 up
        LowRankTerm core{random_tensor({2, 3, 1, 1}, 15), random_tensor({2, 2, 3, 3}, 16),
                         random_tensor({4, 2, 1, 1}, 17), 1.5f};
        std::vector<float> dc(4 * 3 * 9, 0.0f);
        const std::vector<float> u = core.up.to_vector(), m = core.mid.to_vector(),
                                 d = core.down.to_vector();
        for (int o = 0; o < 4; ++o)
            for (int i = 0; i < 3; ++i)
                for (int k = 0; k < 9; ++k)
                    for (int a = 0; a < 2; ++a)
                        for (int b = 0; b < 2; ++b)
                            dc[(o * 3 + i) * 9 + k] +=
                                1.5f * u[o * 2 + a] * m[(a * 2 + b) * 9 + k] * d[b * 3 + i];
        const Tensor merged = c.weight + dense + Tensor::from_vector({4, 3, 3, 3}, dc);
        WeightPatches set;
        set["conv.weight"].terms = {plain, core};
        const ScopedWeightPatches active(&set);
        EXPECT_LT(max_diff(c.forward(x), conv2d(x, merged, c.bias, c.options)), 1e-4f) << stride;
    }
}

// forward_add (a residual block's conv + skip + activation): with a patch it adds the
// residual and applies the LeakyReLU after the patched convolution, as without one.
TEST(WeightPatch, ConvForwardAddAppliesThePatchBeforeTheResidual) {
    Conv2d c;
    c.weight = random_tensor({4, 3, 3, 3}, 20);
    c.bias = random_tensor({4}, 21);
    c.options.pad_h = c.options.pad_w = 1;
    c.options.leaky_relu = true;
    c.options.negative_slope = 0.25f;
    c.name = "conv.weight";
    const Tensor x = random_tensor({1, 3, 6, 6}, 22);
    const Tensor residual = random_tensor({1, 4, 6, 6}, 23);
    const Tensor delta = random_tensor({4, 3, 3, 3}, 24) * 0.5f;
    auto expected = [&](const Tensor& weight) {
        Conv2dOptions linear = c.options;
        linear.leaky_relu = false;
        std::vector<float> v = (conv2d(x, weight, c.bias, linear) + residual).to_vector();
        for (float& e : v) e = e < 0 ? 0.25f * e : e;
        return Tensor::from_vector({1, 4, 6, 6}, v);
    };
    EXPECT_LT(max_diff(c.forward_add(x, residual), expected(c.weight)), 1e-5f);
    WeightPatches set;
    set["conv.weight"].deltas.push_back(delta);
    const ScopedWeightPatches active(&set);
    EXPECT_LT(max_diff(c.forward_add(x, residual), expected(c.weight + delta)), 1e-4f);
}

TEST(WeightPatch, EpochChangesWithTheActiveSet) {
    // What caches a layer's output keys it on the epoch: a set made active, or ended, moves it.
    const uint64_t before = weight_patches_epoch();
    uint64_t inside = 0;
    {
        const WeightPatches none;
        const ScopedWeightPatches active(&none);
        inside = weight_patches_epoch();
        EXPECT_NE(inside, before);
        EXPECT_EQ(weight_patches_epoch(), inside);  // steady while the set is
    }
    EXPECT_NE(weight_patches_epoch(), inside);
    EXPECT_NE(weight_patches_epoch(), before);
}

}  // namespace
}  // namespace sd
