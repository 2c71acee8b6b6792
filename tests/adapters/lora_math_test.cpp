// Each format's weight change against a direct element-by-element computation.
#include "adapters/lora_math.h"

#include <gtest/gtest.h>

#include "adapters/lora_test_util.h"
#include "base/error.h"

namespace sd {
namespace {

using test::max_abs_diff;
using test::random_tensor;
using test::scalar_tensor;

LoraModule module(std::map<std::string, Tensor> parts) {
    LoraModule m;
    m.key = "test";
    m.parts = std::move(parts);
    return m;
}

// C[i][j] = sum_k A[i][k] B[k][j] over flat row-major values.
std::vector<float> matmul_direct(const std::vector<float>& a, const std::vector<float>& b,
                                 int64_t n, int64_t k, int64_t m) {
    std::vector<float> c(static_cast<size_t>(n * m), 0.0f);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j)
            for (int64_t t = 0; t < k; ++t) c[i * m + j] += a[i * k + t] * b[t * m + j];
    return c;
}

TEST(LoraMath, LinearLoraIsScaledUpTimesDown) {
    const Tensor down = random_tensor({4, 6}, 1), up = random_tensor({5, 4}, 2);
    const LoraModule m = module({{"down", down}, {"up", up}, {"alpha", scalar_tensor(2.0f)}});
    const Tensor d = lora_delta(m, {5, 6}, 0.5f, {});
    std::vector<float> want = matmul_direct(up.to_vector(), down.to_vector(), 5, 4, 6);
    for (float& v : want) v *= 2.0f / 4.0f * 0.5f;
    EXPECT_LT(max_abs_diff(d, Tensor::from_vector({5, 6}, want)), 1e-5f);
    // .scale wins over alpha
    const LoraModule s = module({{"down", down},
                                 {"up", up},
                                 {"alpha", scalar_tensor(2.0f)},
                                 {"scale", scalar_tensor(3.0f)}});
    EXPECT_FLOAT_EQ(lora_scale(s), 3.0f);
}

TEST(LoraMath, ConvLoraWithAndWithoutTuckerCore) {
    // 3x3 down, 1x1 up
    const Tensor down = random_tensor({2, 3, 3, 3}, 3), up = random_tensor({4, 2, 1, 1}, 4);
    const Tensor d = lora_delta(module({{"down", down}, {"up", up}}), {4, 3, 3, 3}, 1.0f, {});
    const std::vector<float> want = matmul_direct(up.to_vector(), down.to_vector(), 4, 2, 27);
    EXPECT_LT(max_abs_diff(d, Tensor::from_vector({4, 3, 3, 3}, want)), 1e-5f);
    // kohya conv mid: down [r, in, 1, 1], mid [r, r, 3, 3], up [out, r, 1, 1]
    const Tensor d1 = random_tensor({2, 3, 1, 1}, 5), mid = random_tensor({2, 2, 3, 3}, 6);
    const Tensor d2 =
        lora_delta(module({{"down", d1}, {"mid", mid}, {"up", up}}), {4, 3, 3, 3}, 1.0f, {});
    const std::vector<float> u = up.to_vector(), c = mid.to_vector(), dn = d1.to_vector();
    std::vector<float> want2(4 * 3 * 9, 0.0f);
    for (int o = 0; o < 4; ++o)
        for (int i = 0; i < 3; ++i)
            for (int k = 0; k < 9; ++k)
                for (int a = 0; a < 2; ++a)
                    for (int b = 0; b < 2; ++b)
                        want2[(o * 3 + i) * 9 + k] +=
                            u[o * 2 + a] * c[(a * 2 + b) * 9 + k] * dn[b * 3 + i];
    EXPECT_LT(max_abs_diff(d2, Tensor::from_vector({4, 3, 3, 3}, want2)), 1e-5f);
}

TEST(LoraMath, LohaIsTheHadamardProductOfTwoPairs) {
    const Tensor a1 = random_tensor({5, 2}, 1), b1 = random_tensor({2, 6}, 2);
    const Tensor a2 = random_tensor({5, 2}, 3), b2 = random_tensor({2, 6}, 4);
    const LoraModule m = module({{"hada_w1_a", a1},
                                 {"hada_w1_b", b1},
                                 {"hada_w2_a", a2},
                                 {"hada_w2_b", b2},
                                 {"alpha", scalar_tensor(1.0f)}});
    const Tensor d = lora_delta(m, {5, 6}, 2.0f, {});
    const std::vector<float> w1 = matmul_direct(a1.to_vector(), b1.to_vector(), 5, 2, 6);
    const std::vector<float> w2 = matmul_direct(a2.to_vector(), b2.to_vector(), 5, 2, 6);
    std::vector<float> want(30);
    for (size_t i = 0; i < 30; ++i) want[i] = w1[i] * w2[i] * (1.0f / 2.0f) * 2.0f;
    EXPECT_LT(max_abs_diff(d, Tensor::from_vector({5, 6}, want)), 1e-5f);
}

TEST(LoraMath, LokrIsAKroneckerProduct) {
    const Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    const Tensor b = Tensor::from_vector({1, 2}, {10, 20});
    EXPECT_EQ(kron(a, b).to_vector(), std::vector<float>({10, 20, 20, 40, 30, 60, 40, 80}));
    EXPECT_EQ(kron(a, b).shape(), Shape({2, 4}));
    // factorised w2, alpha / rank
    const Tensor w1 = random_tensor({2, 3}, 1), w2a = random_tensor({4, 2}, 2),
                 w2b = random_tensor({2, 5}, 3);
    const LoraModule m = module(
        {{"lokr_w1", w1}, {"lokr_w2_a", w2a}, {"lokr_w2_b", w2b}, {"alpha", scalar_tensor(4.0f)}});
    const Tensor d = lora_delta(m, {8, 15}, 1.0f, {});
    const std::vector<float> w2 = matmul_direct(w2a.to_vector(), w2b.to_vector(), 4, 2, 5);
    const std::vector<float> v1 = w1.to_vector();
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
            for (int p = 0; p < 4; ++p)
                for (int q = 0; q < 5; ++q)
                    EXPECT_NEAR(d.to_vector()[(i * 4 + p) * 15 + j * 5 + q],
                                v1[i * 3 + j] * w2[p * 5 + q] * 2.0f, 1e-5f);
    // full w1 and w2: rank 1, scale 1 whatever alpha says
    const Tensor w2full = random_tensor({4, 5}, 4);
    const LoraModule full =
        module({{"lokr_w1", w1}, {"lokr_w2", w2full}, {"alpha", scalar_tensor(8.0f)}});
    EXPECT_LT(max_abs_diff(lora_delta(full, {8, 15}, 1.0f, {}), kron(w1, w2full)), 1e-6f);
}

TEST(LoraMath, DoraRescalesRowsToTheStoredMagnitude) {
    const Tensor w = random_tensor({3, 4}, 1), down = random_tensor({2, 4}, 2),
                 up = random_tensor({3, 2}, 3);
    const Tensor mag = Tensor::from_vector({3, 1}, {0.5f, 1.0f, 2.0f});
    const LoraModule m = module({{"down", down}, {"up", up}, {"dora_scale", mag}});
    const Tensor d = lora_delta(m, {3, 4}, 0.5f, w);
    const std::vector<float> base = w.to_vector();
    const std::vector<float> dw = matmul_direct(up.to_vector(), down.to_vector(), 3, 2, 4);
    for (int o = 0; o < 3; ++o) {
        double norm = 0;
        for (int i = 0; i < 4; ++i)
            norm += double(base[o * 4 + i] + dw[o * 4 + i]) * (base[o * 4 + i] + dw[o * 4 + i]);
        for (int i = 0; i < 4; ++i) {
            const float target =
                float((base[o * 4 + i] + dw[o * 4 + i]) * mag.to_vector()[o] / std::sqrt(norm));
            EXPECT_NEAR(d.to_vector()[o * 4 + i], 0.5f * (target - base[o * 4 + i]), 1e-5f);
        }
    }
}

TEST(LoraMath, OnePassMergeEqualsWeightPlusDelta) {
    const LoraModule m = module({{"down", random_tensor({3, 64}, 1)},
                                 {"up", random_tensor({7, 3}, 2)},
                                 {"alpha", scalar_tensor(1.5f)}});
    const Tensor w32 = random_tensor({7, 64}, 3);
    const std::pair<DType, float> cases[] = {
        {DType::F32, 1e-5f}, {DType::F16, 4e-3f}, {DType::Q8_0, 6e-2f}};
    for (const auto& [dtype, tolerance] : cases) {
        const Tensor w = convert(w32, dtype);
        const Tensor merged = merge_low_rank(w, lora_term(m, {7, 64}, 0.7f));
        EXPECT_EQ(merged.dtype(), dtype);
        const Tensor want =
            convert(convert(w, DType::F32) + lora_delta(m, {7, 64}, 0.7f, {}), dtype);
        EXPECT_LT(max_abs_diff(convert(merged, DType::F32), convert(want, DType::F32)), tolerance)
            << dtype_name(dtype);
    }
    // the weight itself is not written
    EXPECT_EQ(w32.to_vector(), random_tensor({7, 64}, 3).to_vector());
}

TEST(LoraMath, SizesThatDoNotFitAreErrors) {
    const LoraModule m =
        module({{"down", random_tensor({4, 6}, 1)}, {"up", random_tensor({5, 4}, 2)}});
    EXPECT_THROW(lora_delta(m, {5, 7}, 1.0f, {}), Error);
    EXPECT_THROW(lora_term(m, {6, 6}, 1.0f), Error);
    const LowRankTerm t = lora_term(m, {5, 6}, 2.0f);
    EXPECT_FLOAT_EQ(t.scale, 2.0f);
    EXPECT_EQ(t.down.shape(), Shape({4, 6}));
}

}  // namespace
}  // namespace sd
