// sd::scaled_dot_product_attention (flash kernel, every ISA) against sd::ref (double scores).
//
// Tolerances: with q, k, v uniform in [-1, 1] the output is a convex combination of values in
// [-1, 1]; the kernel's float scores, its exp2 (< 1 ulp) and float sums over up to ~1000 keys
// give errors of about 1e-7 (measured: <= 1.3e-7 on Zen 5 for D = 160, Lk = 257); we ask for
// atol 5e-6 + rtol 5e-5. With large scores (|s| up to ~100, where a naive float exp would
// overflow) each score's float rounding error is ~1e-5 of its size and moves the softmax
// weights as much (measured: <= 7.5e-6); there we ask for atol 5e-5 + rtol 5e-4.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/attention.h"
#include "ops/cpu/attention_kernels.h"
#include "test_util.h"

namespace sd {
namespace {

using test::compare;
using test::expect_close;
using test::IsaScope;
using test::non_contiguous_copy;
using test::random_tensor;

constexpr double kAtol = 5e-6;
constexpr double kRtol = 5e-5;
constexpr double kLargeAtol = 5e-5;
constexpr double kLargeRtol = 5e-4;
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string label(Isa isa, const std::string& what) {
    return std::string(isa_name(isa)) + " " + what;
}

// Forces one value layout of the kernel (see ops/cpu/attention_kernels.h) while in scope.
class LayoutScope {
  public:
    explicit LayoutScope(attn::LayoutChoice c) : saved_(attn::layout_choice()) {
        attn::set_layout_choice(c);
    }
    ~LayoutScope() { attn::set_layout_choice(saved_); }

  private:
    attn::LayoutChoice saved_;
};

const char* layout_name(attn::LayoutChoice c) {
    switch (c) {
        case attn::LayoutChoice::ValueLanes:
            return "value-lanes";
        case attn::LayoutChoice::KeyLanes:
            return "key-lanes";
        default:
            return "auto";
    }
}

// Runs the kernel on every ISA with each value layout and compares with the reference.
void check_all_isas(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    const AttentionOptions& opt, const std::string& what, double atol = kAtol,
                    double rtol = kRtol) {
    Tensor want = ref::scaled_dot_product_attention(q, k, v, mask, opt);
    for (Isa isa : test::available_isas()) {
        IsaScope scope(isa);
        for (attn::LayoutChoice c : {attn::LayoutChoice::Auto, attn::LayoutChoice::ValueLanes,
                                     attn::LayoutChoice::KeyLanes}) {
            LayoutScope layout(c);
            Tensor got = scaled_dot_product_attention(q, k, v, mask, opt);
            EXPECT_TRUE(got.is_contiguous());
            expect_close(got, want, atol, rtol, label(isa, what) + " " + layout_name(c));
        }
    }
}

std::string dims_str(int64_t b, int64_t h, int64_t lq, int64_t lk, int64_t d, int64_t dv) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "B%lld H%lld Lq%lld Lk%lld D%lld Dv%lld",
                  static_cast<long long>(b), static_cast<long long>(h), static_cast<long long>(lq),
                  static_cast<long long>(lk), static_cast<long long>(d),
                  static_cast<long long>(dv));
    return buf;
}

class AttentionTest : public ::testing::Test {
  protected:
    void SetUp() override { set_num_threads(2); }
};

// ---------------------------------------------------------------------------------------
// The reference itself, on tiny hand-checkable cases.

TEST_F(AttentionTest, ReferenceSingleKeyReturnsItsValue) {
    Tensor q = random_tensor({1, 1, 3, 4}, 1);
    Tensor k = random_tensor({1, 1, 1, 4}, 2);
    Tensor v = Tensor::from_vector({1, 1, 1, 2}, {0.5f, -2.0f});
    Tensor out = ref::scaled_dot_product_attention(q, k, v);
    std::vector<float> o = out.to_vector();
    ASSERT_EQ(o.size(), 6u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_FLOAT_EQ(o[2 * i], 0.5f);
        EXPECT_FLOAT_EQ(o[2 * i + 1], -2.0f);
    }
}

TEST_F(AttentionTest, ReferenceMatchesHandComputedSoftmax) {
    // D = 1, scale 1: scores = q * k.
    Tensor q = Tensor::from_vector({1, 1, 1, 1}, {1.0f});
    Tensor k = Tensor::from_vector({1, 1, 2, 1}, {0.0f, std::log(3.0f)});
    Tensor v = Tensor::from_vector({1, 1, 2, 1}, {1.0f, 5.0f});
    AttentionOptions opt;
    opt.scale = 1.0f;
    // weights 1/4, 3/4 -> 0.25 + 3.75 = 4
    EXPECT_NEAR(ref::scaled_dot_product_attention(q, k, v, {}, opt).item(), 4.0f, 1e-6);
    EXPECT_NEAR(scaled_dot_product_attention(q, k, v, {}, opt).item(), 4.0f, 1e-5);
}

// ---------------------------------------------------------------------------------------
// Kernel vs reference.

TEST_F(AttentionTest, OddSizesEveryHeadDim) {
    const int64_t lens[] = {1, 3, 17, 77, 100, 257};
    const int64_t dims[] = {1, 8, 40, 63, 64, 80, 160};
    uint32_t seed = 100;
    for (int64_t d : dims) {
        for (int64_t lq : lens) {
            for (int64_t lk : lens) {
                // The full grid for small Lq; for large Lq only a few key lengths.
                if (lq >= 100 && lk != 1 && lk != 77 && lk != 257) continue;
                Tensor q = random_tensor({1, 1, lq, d}, seed++);
                Tensor k = random_tensor({1, 1, lk, d}, seed++);
                Tensor v = random_tensor({1, 1, lk, d}, seed++);
                check_all_isas(q, k, v, {}, {}, dims_str(1, 1, lq, lk, d, d));
            }
        }
    }
}

TEST_F(AttentionTest, ValueDimDiffersFromHeadDim) {
    struct Case {
        int64_t lq, lk, d, dv;
    } cases[] = {{17, 77, 40, 80}, {33, 100, 64, 17}, {5, 257, 3, 1},
                 {77, 9, 160, 40}, {8, 192, 16, 48},  {9, 193, 80, 2}};
    uint32_t seed = 500;
    for (const Case& c : cases) {
        Tensor q = random_tensor({1, 2, c.lq, c.d}, seed++);
        Tensor k = random_tensor({1, 2, c.lk, c.d}, seed++);
        Tensor v = random_tensor({1, 2, c.lk, c.dv}, seed++);
        check_all_isas(q, k, v, {}, {}, dims_str(1, 2, c.lq, c.lk, c.d, c.dv));
    }
}

TEST_F(AttentionTest, BatchAndHeads) {
    Tensor q = random_tensor({2, 3, 37, 40}, 11);
    Tensor k = random_tensor({2, 3, 77, 40}, 12);
    Tensor v = random_tensor({2, 3, 77, 40}, 13);
    check_all_isas(q, k, v, {}, {}, "B2 H3");
    AttentionOptions causal;
    causal.causal = true;
    check_all_isas(q, k, v, {}, causal, "B2 H3 causal");
}

TEST_F(AttentionTest, ExplicitScale) {
    Tensor q = random_tensor({1, 2, 20, 24}, 21);
    Tensor k = random_tensor({1, 2, 30, 24}, 22);
    Tensor v = random_tensor({1, 2, 30, 24}, 23);
    for (float scale : {1.0f, 0.05f, -0.7f}) {
        AttentionOptions opt;
        opt.scale = scale;
        check_all_isas(q, k, v, {}, opt, "scale " + std::to_string(scale));
    }
}

// A mask of `shape` with values in [-2, 2) and about a quarter of the entries -inf.
Tensor random_mask(const Shape& shape, uint32_t seed) {
    Tensor m = random_tensor(shape, seed, -2.0f, 2.0f);
    Tensor sel = random_tensor(shape, seed + 7, 0.0f, 1.0f);
    std::vector<float> mv = m.to_vector(), sv = sel.to_vector();
    for (size_t i = 0; i < mv.size(); ++i) {
        if (sv[i] < 0.25f) mv[i] = -kInf;
    }
    return Tensor::from_vector(shape, mv);
}

TEST_F(AttentionTest, MaskBroadcastShapes) {
    const int64_t B = 2, H = 3, Lq = 19, Lk = 45, D = 40;
    Tensor q = random_tensor({B, H, Lq, D}, 31);
    Tensor k = random_tensor({B, H, Lk, D}, 32);
    Tensor v = random_tensor({B, H, Lk, D}, 33);
    const std::vector<Shape> shapes = {{B, H, Lq, Lk}, {Lq, Lk},    {1, 1, Lq, Lk}, {B, 1, 1, Lk},
                                       {Lk},           {H, 1, Lk},  {B, H, Lq, 1},  {1},
                                       {B, 1, Lq, Lk}, {1, H, 1, 1}};
    uint32_t seed = 40;
    for (const Shape& s : shapes) {
        Tensor m = random_mask(s, seed++);
        check_all_isas(q, k, v, m, {}, "mask " + s.to_string());
        check_all_isas(q, k, v, non_contiguous_copy(m), {}, "non-contiguous mask " + s.to_string());
        AttentionOptions causal;
        causal.causal = true;
        check_all_isas(q, k, v, m, causal, "causal + mask " + s.to_string());
    }
}

TEST_F(AttentionTest, MaskAcrossKeyTiles) {
    // Lk spans three key tiles of the kernel; the mask uses every row and key.
    const int64_t Lk = 2 * attn::kKeyTile + 88;
    Tensor q = random_tensor({1, 2, 21, 64}, 51);
    Tensor k = random_tensor({1, 2, Lk, 64}, 52);
    Tensor v = random_tensor({1, 2, Lk, 64}, 53);
    Tensor m = random_mask({1, 2, 21, Lk}, 54);
    check_all_isas(q, k, v, m, {}, "mask over 3 key tiles");
    // A mask that keeps only the last tile's keys for some rows: the running max starts at
    // -inf for several tiles.
    std::vector<float> mv(static_cast<size_t>(21 * Lk), 0.0f);
    for (int64_t i = 0; i < 21; ++i) {
        for (int64_t j = 0; j < Lk; ++j) {
            if (i % 3 == 0 && j < Lk - 10) mv[i * Lk + j] = -kInf;
            if (i % 3 == 1 && j >= 10) mv[i * Lk + j] = -kInf;
        }
    }
    check_all_isas(q, k, v, Tensor::from_vector({21, Lk}, mv), {}, "late keys only");
}

TEST_F(AttentionTest, FullyMaskedRowsGiveZeros) {
    const int64_t Lq = 11, Lk = attn::kKeyTile + 100, D = 40;
    Tensor q = random_tensor({1, 2, Lq, D}, 61);
    Tensor k = random_tensor({1, 2, Lk, D}, 62);
    Tensor v = random_tensor({1, 2, Lk, D}, 63);
    std::vector<float> mv(static_cast<size_t>(Lq * Lk), 0.5f);
    for (int64_t j = 0; j < Lk; ++j) {
        mv[3 * Lk + j] = -kInf;
        mv[10 * Lk + j] = -kInf;
    }
    Tensor m = Tensor::from_vector({Lq, Lk}, mv);
    check_all_isas(q, k, v, m, {}, "fully masked rows");
    for (Isa isa : test::available_isas()) {
        IsaScope scope(isa);
        std::vector<float> o = scaled_dot_product_attention(q, k, v, m).to_vector();
        for (int64_t h = 0; h < 2; ++h) {
            for (int64_t row : {int64_t{3}, int64_t{10}}) {
                for (int64_t c = 0; c < D; ++c) {
                    ASSERT_EQ(o[static_cast<size_t>((h * Lq + row) * D + c)], 0.0f)
                        << isa_name(isa) << " row " << row;
                }
            }
        }
    }
    // Every key of every row masked.
    Tensor all = Tensor::full({1}, -kInf);
    for (Isa isa : test::available_isas()) {
        IsaScope scope(isa);
        for (float x : scaled_dot_product_attention(q, k, v, all).to_vector()) ASSERT_EQ(x, 0.0f);
    }
}

TEST_F(AttentionTest, Causal) {
    struct Case {
        int64_t lq, lk, d;
    } cases[] = {{77, 77, 64},
                 {1, 1, 8},
                 {17, 17, 40},
                 {257, 257, 80},
                 {3, 100, 40},
                 {17, 257, 64},
                 {100, 17, 40},
                 {200, 450, 40},
                 {attn::kKeyTile + 100, attn::kKeyTile + 100, 40},
                 {40, 2 * attn::kKeyTile + 50, 64}};
    uint32_t seed = 70;
    AttentionOptions causal;
    causal.causal = true;
    for (const Case& c : cases) {
        Tensor q = random_tensor({1, 2, c.lq, c.d}, seed++);
        Tensor k = random_tensor({1, 2, c.lk, c.d}, seed++);
        Tensor v = random_tensor({1, 2, c.lk, c.d}, seed++);
        check_all_isas(q, k, v, {}, causal, "causal " + dims_str(1, 2, c.lq, c.lk, c.d, c.d));
    }
}

TEST_F(AttentionTest, CausalMatchesExplicitMask) {
    // Causal with Lq <= Lk is the additive mask that hides keys j > i + (Lk - Lq).
    const int64_t Lq = 40, Lk = 70, D = 32;
    Tensor q = random_tensor({1, 1, Lq, D}, 81);
    Tensor k = random_tensor({1, 1, Lk, D}, 82);
    Tensor v = random_tensor({1, 1, Lk, D}, 83);
    std::vector<float> mv(static_cast<size_t>(Lq * Lk), 0.0f);
    for (int64_t i = 0; i < Lq; ++i) {
        for (int64_t j = i + (Lk - Lq) + 1; j < Lk; ++j) mv[i * Lk + j] = -kInf;
    }
    Tensor m = Tensor::from_vector({Lq, Lk}, mv);
    AttentionOptions causal;
    causal.causal = true;
    Tensor want = ref::scaled_dot_product_attention(q, k, v, m);
    expect_close(ref::scaled_dot_product_attention(q, k, v, {}, causal), want, 1e-6, 1e-6,
                 "ref causal vs mask");
    for (Isa isa : test::available_isas()) {
        IsaScope scope(isa);
        expect_close(scaled_dot_product_attention(q, k, v, {}, causal), want, kAtol, kRtol,
                     label(isa, "causal vs mask"));
    }
}

TEST_F(AttentionTest, NonContiguousInputs) {
    const int64_t B = 2, H = 2, Lq = 23, Lk = 41, D = 40, Dv = 24;
    Tensor q = random_tensor({B, H, Lq, D}, 91);
    Tensor k = random_tensor({B, H, Lk, D}, 92);
    Tensor v = random_tensor({B, H, Lk, Dv}, 93);
    Tensor qn = non_contiguous_copy(q), kn = non_contiguous_copy(k), vn = non_contiguous_copy(v);
    ASSERT_FALSE(qn.is_contiguous());
    ASSERT_NE(qn.stride(3), 1);
    Tensor want = ref::scaled_dot_product_attention(q, k, v);
    expect_close(ref::scaled_dot_product_attention(qn, kn, vn), want, 1e-6, 1e-6,
                 "ref non-contiguous");
    check_all_isas(qn, kn, vn, {}, {}, "q, k, v non-contiguous");
    check_all_isas(qn, k, v, {}, {}, "q non-contiguous");
    check_all_isas(q, kn, v, {}, {}, "k non-contiguous");
    check_all_isas(q, k, vn, {}, {}, "v non-contiguous");
}

TEST_F(AttentionTest, HeadsSplitFromLinearOutput) {
    // As a model does it: x [B, L, H * D] from a linear, viewed [B, L, H, D], permuted to
    // [B, H, L, D]: rows of D contiguous, head and sequence strides arbitrary.
    const int64_t B = 2, H = 5, Lq = 50, Lk = 77, D = 40;
    Tensor xq = random_tensor({B, Lq, H * D}, 101);
    Tensor xk = random_tensor({B, Lk, H * D}, 102);
    Tensor xv = random_tensor({B, Lk, H * D}, 103);
    Tensor q = xq.view({B, Lq, H, D}).permute({0, 2, 1, 3});
    Tensor k = xk.view({B, Lk, H, D}).permute({0, 2, 1, 3});
    Tensor v = xv.view({B, Lk, H, D}).permute({0, 2, 1, 3});
    ASSERT_FALSE(q.is_contiguous());
    ASSERT_EQ(q.stride(3), 1);
    check_all_isas(q, k, v, {}, {}, "heads from [B, L, H*D]");
    // And k, v sliced out of one fused kv projection [B, Lk, 2 * H * D].
    Tensor kv = random_tensor({B, Lk, 2 * H * D}, 104);
    Tensor k2 = kv.narrow(2, 0, H * D).reshape({B, Lk, H, D}).permute({0, 2, 1, 3});
    Tensor v2 = kv.narrow(2, H * D, H * D).reshape({B, Lk, H, D}).permute({0, 2, 1, 3});
    check_all_isas(q, k2, v2, {}, {}, "k, v from a fused projection");
}

TEST_F(AttentionTest, ExpandedInputs) {
    // Stride-0 dims: one k/v shared by every batch entry.
    const int64_t B = 3, H = 2, Lq = 10, Lk = 20, D = 16;
    Tensor q = random_tensor({B, H, Lq, D}, 111);
    Tensor k = random_tensor({1, H, Lk, D}, 112).expand({B, H, Lk, D});
    Tensor v = random_tensor({1, H, Lk, D}, 113).expand({B, H, Lk, D});
    check_all_isas(q, k, v, {}, {}, "expanded k, v");
}

TEST_F(AttentionTest, LargeScoresAreStable) {
    // Scale 1, q, k in [-3, 3), D = 64: scores up to ~100, where exp overflows in float.
    Tensor q = random_tensor({1, 2, 77, 64}, 121, -3.0f, 3.0f);
    const int64_t Lk = attn::kKeyTile + 100;  // two key tiles
    Tensor k = random_tensor({1, 2, Lk, 64}, 122, -3.0f, 3.0f);
    Tensor v = random_tensor({1, 2, Lk, 64}, 123);
    AttentionOptions opt;
    opt.scale = 1.0f;
    check_all_isas(q, k, v, {}, opt, "scores ~100", kLargeAtol, kLargeRtol);
    // Values up to 30 in q: scores around +-30 with the default scale.
    Tensor q30 = random_tensor({1, 2, 77, 40}, 124, -30.0f, 30.0f);
    Tensor k30 = random_tensor({1, 2, Lk, 40}, 125);
    Tensor v30 = random_tensor({1, 2, Lk, 40}, 126);
    check_all_isas(q30, k30, v30, {}, {}, "q up to 30", kLargeAtol, kLargeRtol);
    // Growing scores along the keys: the running max rises in every key tile, so every
    // rescale of the accumulator is exercised.
    const int64_t Lr = 3 * attn::kKeyTile + 20;
    std::vector<float> kv(static_cast<size_t>(Lr * 40));
    for (int64_t j = 0; j < Lr; ++j)
        for (int c = 0; c < 40; ++c) kv[j * 40 + c] = static_cast<float>(j) / 300.0f;
    Tensor kramp = Tensor::from_vector({1, 1, Lr, 40}, kv);
    Tensor qpos = random_tensor({1, 1, 20, 40}, 127, 0.5f, 1.5f);
    check_all_isas(qpos, kramp, random_tensor({1, 1, Lr, 40}, 128), {}, {}, "rising max",
                   kLargeAtol, kLargeRtol);
}

TEST_F(AttentionTest, EmptyDims) {
    for (Isa isa : test::available_isas()) {
        IsaScope scope(isa);
        Tensor out = scaled_dot_product_attention(random_tensor({1, 2, 0, 8}, 1),
                                                  random_tensor({1, 2, 5, 8}, 2),
                                                  random_tensor({1, 2, 5, 4}, 3));
        EXPECT_EQ(out.shape(), Shape({1, 2, 0, 4}));
        // No keys at all: every row sees nothing -> zeros.
        Tensor z = scaled_dot_product_attention(random_tensor({1, 2, 3, 8}, 1),
                                                random_tensor({1, 2, 0, 8}, 2),
                                                random_tensor({1, 2, 0, 4}, 3));
        EXPECT_EQ(z.shape(), Shape({1, 2, 3, 4}));
        for (float x : z.to_vector()) EXPECT_EQ(x, 0.0f);
    }
}

TEST_F(AttentionTest, SameResultOnAnyThreadCount) {
    // B * H == 1: the query blocks are what the threads share. With 3 threads the blocks
    // shrink to 16 rows (fewer than 4 tasks per thread otherwise).
    Tensor q = random_tensor({1, 1, 333, 40}, 131);
    Tensor k = random_tensor({1, 1, attn::kKeyTile + 300, 40}, 132);
    Tensor v = random_tensor({1, 1, attn::kKeyTile + 300, 40}, 133);
    for (Isa isa : test::available_isas()) {
        IsaScope scope(isa);
        set_num_threads(1);
        Tensor one = scaled_dot_product_attention(q, k, v);
        for (int n : {2, 3}) {
            set_num_threads(n);
            Tensor many = scaled_dot_product_attention(q, k, v);
            // Every row is computed the same way whichever thread and block run it:
            // bit-identical.
            expect_close(many, one, 0.0, 0.0, label(isa, std::to_string(n) + " threads vs 1"));
        }
    }
    set_num_threads(2);
}

// ---------------------------------------------------------------------------------------
// Bad input throws sd::Error with the shapes in the message.

template <class F>
void expect_error_mentioning(F&& f, const std::string& needle) {
    try {
        f();
        ADD_FAILURE() << "expected sd::Error mentioning '" << needle << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST_F(AttentionTest, BadInputThrows) {
    Tensor q = random_tensor({1, 2, 4, 8}, 1);
    Tensor k = random_tensor({1, 2, 6, 8}, 2);
    Tensor v = random_tensor({1, 2, 6, 5}, 3);
    using Fn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const AttentionOptions&);
    for (Fn fn : {static_cast<Fn>(&scaled_dot_product_attention),
                  static_cast<Fn>(&ref::scaled_dot_product_attention)}) {
        // Head dim mismatch.
        expect_error_mentioning(
            [&] {
                fn(q, random_tensor({1, 2, 6, 7}, 4), v, {}, {});
            },
            "f32[1, 2, 6, 7]");
        // Key count mismatch between k and v.
        expect_error_mentioning(
            [&] {
                fn(q, k, random_tensor({1, 2, 5, 5}, 4), {}, {});
            },
            "f32[1, 2, 5, 5]");
        // Batch / heads mismatch.
        expect_error_mentioning(
            [&] {
                fn(q, random_tensor({1, 3, 6, 8}, 4), v, {}, {});
            },
            "f32[1, 3, 6, 8]");
        expect_error_mentioning(
            [&] {
                fn(random_tensor({2, 2, 4, 8}, 4), k, v, {}, {});
            },
            "f32[2, 2, 4, 8]");
        // Wrong rank.
        expect_error_mentioning(
            [&] {
                fn(random_tensor({2, 4, 8}, 4), k, v, {}, {});
            },
            "f32[2, 4, 8]");
        // Wrong dtype.
        expect_error_mentioning(
            [&] {
                fn(q, Tensor::zeros({1, 2, 6, 8}, DType::F16), v, {}, {});
            },
            "f16");
        expect_error_mentioning([&] { fn(q, k, v, Tensor::zeros({4, 6}, DType::I32), {}); }, "i32");
        // Mask that does not broadcast.
        expect_error_mentioning([&] { fn(q, k, v, random_tensor({4, 5}, 4), {}); }, "f32[4, 5]");
        expect_error_mentioning(
            [&] {
                fn(q, k, v, random_tensor({3, 4, 6}, 4), {});
            },
            "f32[3, 4, 6]");
        expect_error_mentioning(
            [&] {
                fn(q, k, v, random_tensor({1, 1, 1, 1, 6}, 4), {});
            },
            "f32[1, 1, 1, 1, 6]");
        // Head dim beyond the supported range.
        expect_error_mentioning(
            [&] {
                fn(random_tensor({1, 1, 1, 16385}, 4), random_tensor({1, 1, 1, 16385}, 5),
                   random_tensor({1, 1, 1, 2}, 6), {}, {});
            },
            "16385");
        // Undefined input.
        expect_error_mentioning([&] { fn(q, Tensor(), v, {}, {}); }, "defined");
        // Non-finite scale.
        AttentionOptions nan_scale;
        nan_scale.scale = std::numeric_limits<float>::quiet_NaN();
        expect_error_mentioning([&] { fn(q, k, v, {}, nan_scale); }, "scale");
    }
}

}  // namespace
}  // namespace sd
