// linear and matmul kernels against the reference, on every kernel family this machine
// runs, for odd sizes, strided inputs and every weight dtype.
//
// Tolerance: the kernels accumulate in f32 in a different order from the reference
// (double), over K products of values in [-1, 1]; the difference stays within
// kAtolPerK * K absolute plus kRtol relative. Block-quant weights are compared against
// the reference run on the dequantized (f32) weight, so only the summation order differs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "ops/compute_type.h"
#include "ops/linear.h"
#include "tensor/quant.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr double kAtolPerK = 2e-6;
constexpr double kRtol = 1e-5;

double atol_for(int64_t k) {
    return kAtolPerK * static_cast<double>(std::max<int64_t>(k, 1));
}

std::string isa_label(Isa isa) {
    return std::string("isa ") + isa_name(isa);
}

std::string case_label(int64_t m, int64_t n, int64_t k, DType dtype) {
    return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) + " " +
           dtype_name(dtype);
}

TEST(Linear, RefMatchesHandComputed) {
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, -1, 0, 2});
    Tensor w = Tensor::from_vector({2, 3}, {1, 0, -1, 0.5f, 0.5f, 0.5f});
    Tensor b = Tensor::from_vector({2}, {10, 20});
    // Row 0: [1-3, 0.5*6] + b = [8, 23]; row 1: [-1-2, 0.5*1] + b = [7, 20.5].
    test::expect_close(ref::linear(x, w, b), Tensor::from_vector({2, 2}, {8, 23, 7, 20.5f}), 0, 0);
    test::expect_close(linear(x, w, b), Tensor::from_vector({2, 2}, {8, 23, 7, 20.5f}), 1e-6, 0);
}

TEST(Linear, PlainWeightsMatchRef) {
    // f32 products for every weight (auto would round a bf16 weight's activations).
    const ScopedComputeType f32(ComputeType::F32);
    const int64_t sizes[] = {1, 3, 4, 5, 17, 33, 77, 100};
    const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
    uint32_t seed = 1;
    for (int64_t m : sizes) {
        for (int64_t n : sizes) {
            for (int64_t k : sizes) {
                const DType dtype = dtypes[seed % 3];
                Tensor x = test::random_tensor({m, k}, seed++);
                Tensor w = test::random_weight(n, k, dtype, seed++);
                Tensor b = seed % 2 ? test::random_tensor({n}, seed++) : Tensor();
                const Tensor want = ref::linear(x, w, b);
                for (Isa isa : test::available_isas()) {
                    test::IsaScope scope(isa);
                    test::expect_close(linear(x, w, b), want, atol_for(k), kRtol,
                                       isa_label(isa) + " " + case_label(m, n, k, dtype));
                }
            }
        }
    }
}

TEST(Linear, LargerThanOneBlockMatchesRef) {
    // Several k blocks, several tasks, partial tiles on every edge, both sharing modes.
    struct Case {
        int64_t m, n, k;
    };
    const Case cases[] = {{300, 130, 1100}, {77, 333, 513}, {129, 1000, 65}, {5, 70, 2100}};
    uint32_t seed = 100;
    for (const Case& c : cases) {
        for (DType dtype : {DType::F32, DType::F16}) {
            Tensor x = test::random_tensor({c.m, c.k}, seed++);
            Tensor w = test::random_weight(c.n, c.k, dtype, seed++);
            Tensor b = test::random_tensor({c.n}, seed++);
            const Tensor want = ref::linear(x, w, b);
            for (Isa isa : test::available_isas()) {
                test::IsaScope scope(isa);
                test::expect_close(linear(x, w, b), want, atol_for(c.k), kRtol,
                                   isa_label(isa) + " " + case_label(c.m, c.n, c.k, dtype));
            }
        }
    }
}

TEST(Linear, BlockQuantWeightsMatchRefOnDequantized) {
    const DType types[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0,   DType::Q5_1,
                           DType::Q8_0, DType::Q2_K, DType::Q3_K,   DType::Q4_K,
                           DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};
    uint32_t seed = 200;
    for (DType dtype : types) {
        const int64_t bs = block_size(dtype);
        // 1280 / 1056: more than one k block, so block boundaries must fall on quant blocks.
        for (int64_t k : {bs, 3 * bs, bs == 256 ? int64_t{1280} : int64_t{1056}}) {
            for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 9}, {3, 17}, {77, 100}, {130, 33}}) {
                Tensor x = test::random_tensor({m, k}, seed++);
                Tensor w = test::random_weight(n, k, dtype, seed++);
                Tensor b = test::random_tensor({n}, seed++);
                const Tensor want = ref::linear(x, test::dequantized(w), b);
                const std::string what = case_label(m, n, k, dtype);
                test::expect_close(ref::linear(x, w, b), want, atol_for(k), kRtol, what + " ref");
                for (Isa isa : test::available_isas()) {
                    test::IsaScope scope(isa);
                    test::expect_close(linear(x, w, b), want, atol_for(k), kRtol,
                                       isa_label(isa) + " " + what);
                }
            }
        }
    }
}

TEST(Linear, StridedInputsAndWeights) {
    const ScopedComputeType f32(ComputeType::F32);  // auto would round a bf16 weight's inputs
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        // 3-d input, non-contiguous; weight non-contiguous (transposed storage); f16 bias.
        Tensor x = test::non_contiguous_copy(test::random_tensor({2, 19, 37}, 1));
        Tensor w = test::non_contiguous_copy(test::random_tensor({70, 37}, 2));
        Tensor b = test::random_weight(1, 70, DType::F16, 3).view({70});
        ASSERT_FALSE(x.is_contiguous());
        ASSERT_FALSE(w.is_contiguous());
        test::expect_close(linear(x, w, b), ref::linear(x, w, b), atol_for(37), kRtol,
                           isa_label(isa) + " strided");
        // A row-sliced view: leading dims merge into one row stride.
        Tensor wide = test::random_tensor({2, 5, 80}, 4);
        Tensor xs = wide.narrow(2, 3, 40);
        Tensor w2 = test::random_weight(33, 40, DType::BF16, 5);
        test::expect_close(linear(xs, w2), ref::linear(xs, w2), atol_for(40), kRtol,
                           isa_label(isa) + " narrowed");
        // 1-d input.
        Tensor v = test::random_tensor({40}, 6);
        test::expect_close(linear(v, w2), ref::linear(v, w2), atol_for(40), kRtol,
                           isa_label(isa) + " 1-d");
        // A block-quant weight viewed through a row range.
        Tensor q = test::random_weight(50, 64, DType::Q8_0, 7).narrow(0, 10, 30);
        Tensor xq = test::random_tensor({9, 64}, 8);
        test::expect_close(linear(xq, q), ref::linear(xq, test::dequantized(q.contiguous())),
                           atol_for(64), kRtol, isa_label(isa) + " q8_0 rows 10..39");
    }
}

TEST(Linear, EmptyShapes) {
    Tensor w = test::random_tensor({4, 3}, 1);
    Tensor b = test::random_tensor({4}, 2);
    EXPECT_EQ(linear(Tensor::zeros({0, 3}), w, b).shape(), (Shape{0, 4}));
    // K = 0: the output is the bias.
    Tensor out = linear(Tensor::zeros({2, 0}), Tensor::zeros({4, 0}), b);
    test::expect_close(out, ref::linear(Tensor::zeros({2, 0}), Tensor::zeros({4, 0}), b), 0, 0);
    test::expect_close(out.select(0, 1), b, 0, 0);
}

TEST(Linear, BadShapesThrow) {
    Tensor x = test::random_tensor({5, 8}, 1);
    Tensor w = test::random_tensor({4, 8}, 2);
    EXPECT_THROW(linear(x, test::random_tensor({4, 7}, 3)), Error);
    EXPECT_THROW(linear(x, test::random_tensor({4, 8, 1}, 3)), Error);
    EXPECT_THROW(linear(x, w, test::random_tensor({5}, 3)), Error);
    EXPECT_THROW(linear(x, w, test::random_tensor({2, 2}, 3)), Error);
    EXPECT_THROW(linear(Tensor::zeros({5, 8}, DType::F16), w), Error);
    EXPECT_THROW(linear(x, Tensor()), Error);
    EXPECT_THROW(ref::linear(x, test::random_tensor({4, 7}, 3)), Error);
    try {
        linear(x, test::random_tensor({4, 7}, 3));
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[5, 8]"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[4, 7]"), std::string::npos) << e.what();
    }
}

TEST(Matmul, MatchesRef) {
    struct Case {
        Shape a, b;
    };
    const Case cases[] = {
        {{1, 1}, {1, 1}},           {{3, 17}, {17, 33}},          {{77, 100}, {100, 3}},
        {{2, 33, 17}, {2, 17, 70}}, {{2, 1, 5, 9}, {3, 9, 4}},    {{4, 100, 64}, {64, 77}},
        {{130, 65}, {3, 65, 129}},  {{6, 40, 300}, {6, 300, 40}}, {{2, 130, 1100}, {1100, 70}},
    };
    uint32_t seed = 1;
    for (const Case& c : cases) {
        Tensor a = test::random_tensor(c.a, seed++);
        Tensor b = test::random_tensor(c.b, seed++);
        const Tensor want = ref::matmul(a, b);
        const int64_t k = c.a[c.a.size() - 1];
        // Strided inputs: every layout the packers distinguish.
        Tensor as = test::non_contiguous_copy(a), bs = test::non_contiguous_copy(b);
        Tensor bt = b.transpose(-1, -2).contiguous().transpose(-1, -2);
        test::expect_close(ref::matmul(as, bs), want, atol_for(k), kRtol, "ref strided");
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            const std::string what =
                isa_label(isa) + " " + c.a.to_string() + " x " + c.b.to_string();
            test::expect_close(matmul(a, b), want, atol_for(k), kRtol, what);
            test::expect_close(matmul(as, bs), want, atol_for(k), kRtol, what + " strided");
            test::expect_close(matmul(a, bt), want, atol_for(k), kRtol, what + " b transposed");
        }
    }
}

TEST(Matmul, RefMatchesHandComputed) {
    Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    Tensor b = Tensor::from_vector({2, 3}, {1, 0, 2, 0, 1, -1});
    Tensor want = Tensor::from_vector({2, 3}, {1, 2, 0, 3, 4, 2});
    test::expect_close(ref::matmul(a, b), want, 0, 0);
    test::expect_close(matmul(a, b), want, 1e-6, 0);
}

TEST(Matmul, BadShapesThrow) {
    EXPECT_THROW(matmul(test::random_tensor({3, 4}, 1), test::random_tensor({5, 2}, 2)), Error);
    EXPECT_THROW(matmul(test::random_tensor({2, 3, 4}, 1), test::random_tensor({3, 4, 2}, 2)),
                 Error);
    EXPECT_THROW(matmul(test::random_tensor({4}, 1), test::random_tensor({4, 2}, 2)), Error);
    EXPECT_THROW(matmul(Tensor::zeros({3, 4}, DType::F16), test::random_tensor({4, 2}, 2)), Error);
    EXPECT_THROW(ref::matmul(test::random_tensor({3, 4}, 1), test::random_tensor({5, 2}, 2)),
                 Error);
}

}  // namespace
}  // namespace sd
