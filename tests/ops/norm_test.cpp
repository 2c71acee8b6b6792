// Group norm (with and without fused SiLU) and layer norm: every kernel family against the
// double-precision two-pass reference, incl. values with a large common offset.
// Tolerance: atol 5e-6, rtol 5e-6 on O(1) outputs (measured: <= 1.7e-6 on every path, with
// or without a common offset of 1e4 or 1e6; statistics are exact to ~1e-7 relative and the
// apply pass rounds a few times in f32).
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/norm.h"
#include "ops/ops.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr double kTol = 5e-6;

template <class F>
void for_each_isa(F f) {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        SCOPED_TRACE(isa_name(isa));
        f(isa);
    }
}

void check_group_norm(const Tensor& x, int64_t groups, bool affine, const std::string& what,
                      double tol = kTol) {
    const int64_t c = x.size(1);
    Tensor w = affine ? test::random_tensor({c}, 101, 0.5f, 1.5f) : Tensor();
    Tensor b = affine ? test::random_tensor({c}, 102, -0.5f, 0.5f) : Tensor();
    for (bool silu : {false, true}) {
        const std::string tag = what + (silu ? " +silu" : "") + (affine ? " affine" : "");
        test::expect_close(group_norm(x, groups, w, b, 1e-5f, silu),
                           ref::group_norm(x, groups, w, b, 1e-5f, silu), tol, tol, tag);
    }
}

TEST(GroupNorm, MatchesReference) {
    for_each_isa([](Isa) {
        for (bool affine : {false, true}) {
            check_group_norm(test::random_tensor({2, 32, 8, 8}, 1, -3.0f, 3.0f), 8, affine,
                             "[2,32,8,8]/8");
            check_group_norm(test::random_tensor({1, 320, 17, 15}, 2), 32, affine,
                             "[1,320,17,15]/32");
            check_group_norm(test::random_tensor({3, 6, 5}, 3), 3, affine, "[3,6,5]/3");
            check_group_norm(test::random_tensor({2, 4}, 4), 2, affine, "[2,4]/2 no spatial");
            check_group_norm(test::random_tensor({1, 3, 1, 1}, 5), 3, affine, "one value a group");
            check_group_norm(test::random_tensor({2, 6, 3, 7, 5}, 6), 2, affine, "5-d");
        }
    });
}

// A tensor handed over with std::move is normalised in its own memory when nothing else
// holds it, with the same values as a fresh output; a shared one is left untouched. Both
// the one-task-a-group and the split plans (batch * groups below and above the threads).
TEST(GroupNorm, InPlaceOnHandedOverTensors) {
    for (int64_t groups : {1, 32}) {
        const Tensor x = test::random_tensor({1, 64, 33, 7}, 7, -2.0f, 3.0f);
        const Tensor w = test::random_tensor({64}, 8), b = test::random_tensor({64}, 9);
        const Tensor want = group_norm(x, groups, w, b, 1e-6f, true);
        Tensor mine = x.clone();
        const void* memory = mine.data_ptr();
        const Tensor got = group_norm(std::move(mine), groups, w, b, 1e-6f, true);
        EXPECT_EQ(got.data_ptr(), memory);
        test::expect_close(got, want, 0, 0, "in place");

        Tensor shared = x.clone();
        const Tensor other = shared;
        const Tensor out = group_norm(std::move(shared), groups, w, b, 1e-6f, true);
        EXPECT_NE(out.data_ptr(), other.data_ptr());
        test::expect_close(other, x, 0, 0, "shared input kept");
        test::expect_close(out, want, 0, 0, "shared input");
    }
}

TEST(GroupNorm, UNetAndVaeShapes) {
    for_each_isa([](Isa) {
        check_group_norm(test::random_tensor({1, 320, 64, 64}, 7, -2.0f, 4.0f), 32, true,
                         "[1,320,64,64]");
        // Fewer (sample, group) pairs than threads: the split statistics path, with groups far
        // larger than one piece of the split (VAE-like: few channels, large planes).
        set_num_threads(4);
        check_group_norm(test::random_tensor({1, 4, 300, 301}, 8), 1, true, "[1,4,300,301]/1");
        check_group_norm(test::random_tensor({1, 8, 96, 97}, 9), 2, true, "[1,8,96,97]/2");
        set_num_threads(0);
    });
}

TEST(GroupNorm, LargeMeanKeepsPrecision) {
    for_each_isa([](Isa) {
        for (float offset : {1e4f, 1e6f}) {
            Tensor x = test::random_tensor({1, 64, 32, 32}, 10, offset - 1.0f, offset + 1.0f);
            check_group_norm(x, 32, true, "offset " + std::to_string(offset));
        }
        // A constant group: variance 0, output = bias (x - mean = 0 exactly).
        Tensor c = Tensor::full({1, 2, 4, 4}, 12345.0f);
        Tensor b = Tensor::from_vector({2}, {0.25f, -1.0f});
        Tensor y = group_norm(c, 2, Tensor(), b);
        for (size_t i = 0; i < 32; ++i) EXPECT_EQ(y.to_vector()[i], i < 16 ? 0.25f : -1.0f);
    });
}

TEST(GroupNorm, StridedInputAndParams) {
    for_each_isa([](Isa) {
        Tensor x = test::random_tensor({2, 8, 5, 7}, 11);
        Tensor w = test::random_tensor({8}, 12), b = test::random_tensor({8}, 13);
        Tensor wn = test::non_contiguous_copy(w), bn = test::non_contiguous_copy(b);
        test::expect_close(group_norm(test::non_contiguous_copy(x), 4, wn, bn, 1e-6f, true),
                           ref::group_norm(x, 4, w, b, 1e-6f, true), kTol, kTol, "strided");
        Tensor ex = test::random_tensor({1, 8, 1, 7}, 14).expand({2, 8, 5, 7});
        test::expect_close(group_norm(ex, 2, w, b), ref::group_norm(ex, 2, w, b), kTol, kTol,
                           "expanded");
    });
}

TEST(GroupNorm, KnownValues) {
    // One group of [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
    Tensor x = Tensor::from_vector({1, 1, 4}, {1, 2, 3, 4});
    std::vector<float> y = group_norm(x, 1, Tensor(), Tensor(), 0.0f).to_vector();
    const double s = 1.0 / std::sqrt(1.25);
    EXPECT_NEAR(y[0], -1.5 * s, 1e-6);
    EXPECT_NEAR(y[3], 1.5 * s, 1e-6);
}

TEST(GroupNorm, RejectsBadInput) {
    Tensor x = Tensor::zeros({2, 6, 4, 4});
    try {
        group_norm(x, 4, Tensor(), Tensor());
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[2, 6, 4, 4]"), std::string::npos) << e.what();
    }
    EXPECT_THROW(group_norm(x, 0, Tensor(), Tensor()), Error);
    EXPECT_THROW(group_norm(Tensor::zeros({6}), 2, Tensor(), Tensor()), Error);
    EXPECT_THROW(group_norm(x, 3, Tensor::zeros({5}), Tensor()), Error);
    EXPECT_THROW(group_norm(x, 3, Tensor(), Tensor::zeros({6}, DType::F16)), Error);
    EXPECT_THROW(group_norm(Tensor::zeros({2, 6}, DType::F16), 3, Tensor(), Tensor()), Error);
    EXPECT_THROW(ref::group_norm(x, 4, Tensor(), Tensor()), Error);
}

TEST(LayerNorm, MatchesReference) {
    for_each_isa([](Isa) {
        for (int64_t n : {1, 3, 15, 16, 17, 33, 320, 768, 1000, 5000}) {
            Tensor x = test::random_tensor({3, 5, n}, 20 + static_cast<uint32_t>(n), -4.0f, 4.0f);
            Tensor w = test::random_tensor({n}, 21), b = test::random_tensor({n}, 22);
            const std::string tag = "n=" + std::to_string(n);
            test::expect_close(layer_norm(x, w, b), ref::layer_norm(x, w, b), kTol, kTol, tag);
            test::expect_close(layer_norm(x, w, Tensor()), ref::layer_norm(x, w, Tensor()), kTol,
                               kTol, tag + " no bias");
            test::expect_close(layer_norm(x, Tensor(), b), ref::layer_norm(x, Tensor(), b), kTol,
                               kTol, tag + " no weight");
            test::expect_close(layer_norm(x, Tensor(), Tensor(), 1e-6f),
                               ref::layer_norm(x, Tensor(), Tensor(), 1e-6f), kTol, kTol,
                               tag + " plain");
        }
    });
}

TEST(LayerNorm, StridedLargeMeanAndThreads) {
    for_each_isa([](Isa) {
        Tensor x = test::random_tensor({4, 6, 77}, 30);
        Tensor w = test::random_tensor({77}, 31);
        test::expect_close(
            layer_norm(test::non_contiguous_copy(x), test::non_contiguous_copy(w), Tensor()),
            ref::layer_norm(x, w, Tensor()), kTol, kTol, "strided");
        test::expect_close(layer_norm(x.narrow(2, 3, 40), Tensor(), Tensor()),
                           ref::layer_norm(x.narrow(2, 3, 40), Tensor(), Tensor()), kTol, kTol,
                           "narrowed");
        Tensor big = test::random_tensor({8, 3000}, 32, 9999.0f, 10001.0f);
        test::expect_close(layer_norm(big, Tensor(), Tensor()),
                           ref::layer_norm(big, Tensor(), Tensor()), kTol, kTol, "large mean");
        set_num_threads(4);
        Tensor many = test::random_tensor({2, 4096, 320}, 33);
        test::expect_close(layer_norm(many, Tensor(), Tensor()),
                           ref::layer_norm(many, Tensor(), Tensor()), kTol, kTol, "4 threads");
        set_num_threads(0);
    });
}

TEST(LayerNorm, RejectsBadInput) {
    Tensor x = Tensor::zeros({2, 8});
    EXPECT_THROW(layer_norm(x, Tensor::zeros({7}), Tensor()), Error);
    EXPECT_THROW(layer_norm(x, Tensor(), Tensor::zeros({2, 8})), Error);
    EXPECT_THROW(layer_norm(Tensor::zeros({8}, DType::F16), Tensor(), Tensor()), Error);
    EXPECT_THROW(layer_norm(Tensor::full({}, 1.0f), Tensor(), Tensor()), Error);
}

TEST(RmsNorm, MatchesReferenceAndHandValues) {
    // x / sqrt(mean(x^2) + eps) * w: [3, 4] -> rms 2.5, scaled by w.
    const Tensor x = Tensor::from_vector({1, 2}, {3.0f, 4.0f});
    const Tensor w = Tensor::from_vector({2}, {1.0f, 2.0f});
    const float r = std::sqrt(12.5f + 1e-6f);
    test::expect_close(rms_norm(x, w), Tensor::from_vector({1, 2}, {3.0f / r, 8.0f / r}), 1e-6,
                       1e-6, "hand");
    // A head's slice of a fused projection (strided rows), with and without weights.
    const Tensor qkv = test::random_tensor({2, 37, 3 * 128}, 4);
    const Tensor k = qkv.narrow(2, 128, 128);
    const Tensor scale = test::random_tensor({128}, 5, 0.5f, 1.5f);
    test::expect_close(rms_norm(k, scale), ref::rms_norm(k, scale), kTol, kTol, "strided");
    test::expect_close(rms_norm(k, Tensor()), ref::rms_norm(k, Tensor()), kTol, kTol, "no weight");
    EXPECT_THROW(rms_norm(k, Tensor::zeros({7})), Error);
    EXPECT_THROW(rms_norm(Tensor::zeros({8}, DType::F16), Tensor()), Error);
}

// The Wan VAE's norm over each pixel's channels: the last-dimension RMS norm of the
// channels-last tensor (bit for bit: the same sums in the same order), SiLU fused after it.
TEST(RmsNormChannels, IsTheChannelsLastRmsNorm) {
    const Tensor x = test::random_tensor({3, 40, 7, 37}, 501, -2.0f, 2.0f);
    const Tensor gamma = test::random_tensor({40}, 502, 0.5f, 1.5f);
    const Tensor want =
        permute_copy(rms_norm(permute_copy(x, {0, 2, 3, 1}), gamma, 1e-12f), {0, 3, 1, 2});
    test::expect_close(rms_norm_channels(x, gamma, 1e-12f), want, 0.0f, 0.0f, "norm");
    test::expect_close(rms_norm_channels(x, gamma, 1e-12f, /*silu=*/true), silu(want), 0.0f, 0.0f,
                       "norm + silu");
    EXPECT_THROW(rms_norm_channels(Tensor::zeros({5}), gamma, 1e-6f), Error);
}

}  // namespace
}  // namespace sd
