// The bf16 compute mode (ComputeType::BF16, src/ops/cpu/gemm_avx512_bf16.cpp) through
// linear, matmul and conv2d: odd sizes (M, N, K not multiples of the 6 x 64 tile, odd K,
// several k blocks), both operand-sharing modes, every packer, weights f32, f16, bf16, q8_0
// and q4_K.
//
// Tolerances:
//   - against the reference run on bf16-rounded inputs (double accumulation): the kernel
//     multiplies exactly those values and only its f32 summation differs, so the f32
//     kernels' own tolerance holds: kAtolPerK * K absolute plus kRtol relative;
//   - against the f32 reference on the original values: each product x * w becomes
//     x (1 + e1) * w (1 + e2) with |e| <= 2^-8 (round to nearest even, 8 significant bits),
//     so |bf16 - f32| <= (2^-7 + 2^-16) * sum_k |x_k| |w_k|, checked element by element
//     (plus the f32 slack above).
// Products with at most kDotRows (4) rows of A, and every product while the kernel family
// is lowered below avx512, stay f32 and are held to the f32 tolerance.
//
// The test skips only on a CPU without avx512_bf16. Where the CPU has it but the build has
// no x86 kernels (generic build), a bf16 request must fall back to f32, which is checked.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/compute_type.h"
#include "ops/conv.h"
#include "ops/cpu/gemm.h"
#include "ops/linear.h"
#include "tensor/half.h"
#include "tensor/quant.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr double kAtolPerK = 2e-6;
constexpr double kRtol = 1e-5;
constexpr double kBf16Bound = 1.0 / 128 + 1.0 / 65536;  // 2^-7 + 2^-16

double atol_for(int64_t k) {
    return kAtolPerK * static_cast<double>(std::max<int64_t>(k, 1));
}

class ComputeScope {
  public:
    explicit ComputeScope(ComputeType type) : saved_(compute_type()) { set_compute_type(type); }
    ~ComputeScope() { set_compute_type(saved_); }

  private:
    ComputeType saved_;
};

// A weight of `dtype` ([rows, cols] or any shape with rows first) from random values.
Tensor make_weight(const Shape& shape, DType dtype, uint32_t seed) {
    Tensor f = test::random_tensor(shape, seed);
    if (dtype == DType::F32) return f;
    Tensor w = Tensor::empty(shape, dtype);
    const int64_t rows = shape[0], cols = f.numel() / rows;
    const size_t rb = row_bytes(dtype, cols);
    for (int64_t r = 0; r < rows; ++r) {
        quantize_row(dtype, f.data<float>() + r * cols,
                     static_cast<uint8_t*>(w.data_ptr()) + r * rb, cols);
    }
    return w;
}

// The f32 values of a contiguous weight of any dtype.
Tensor values_of(const Tensor& w) {
    const int64_t rows = w.size(0), cols = w.numel() / rows;
    Tensor f = Tensor::empty(w.shape());
    const size_t rb = row_bytes(w.dtype(), cols);
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(w.dtype(), static_cast<const uint8_t*>(w.data_ptr()) + r * rb,
                       f.data<float>() + r * cols, cols);
    }
    return f;
}

// Each value rounded to bf16 (to nearest even) and back.
Tensor bf16_rounded(const Tensor& t) {
    std::vector<float> v = t.contiguous().to_vector();
    for (float& x : v) x = bf16_to_f32(f32_to_bf16(x));
    return Tensor::from_vector(t.shape(), v);
}

Tensor abs_of(const Tensor& t) {
    std::vector<float> v = t.contiguous().to_vector();
    for (float& x : v) x = std::fabs(x);
    return Tensor::from_vector(t.shape(), v);
}

// |got - want| <= kBf16Bound * bound + atol, element by element.
void expect_within_bf16_bound(const Tensor& got, const Tensor& want, const Tensor& bound,
                              double atol, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    const std::vector<float> g = got.to_vector(), w = want.to_vector(), b = bound.to_vector();
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < g.size(); ++i) {
        const double err = std::fabs(static_cast<double>(g[i]) - w[i]);
        if (!(err <= kBf16Bound * b[i] + atol)) {
            if (first < 0) first = static_cast<int64_t>(i);
            ++bad;
        }
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << g.size()
                      << " values past the bf16 bound; first at " << first << ": got "
                      << (first >= 0 ? g[first] : 0.f) << ", f32 " << (first >= 0 ? w[first] : 0.f)
                      << ", bound " << (first >= 0 ? kBf16Bound * b[first] : 0.f);
}

// Whether this run computes in bf16; skips the test on a CPU without avx512_bf16.
#define REQUIRE_BF16_CPU()                                                            \
    do {                                                                              \
        if (!cpu_features().avx512bf16) GTEST_SKIP() << "this CPU lacks avx512_bf16"; \
    } while (0)

// Inside a ComputeScope(BF16): bf16 is in effect wherever the build has the x86 kernels
// (the CPU's avx512_bf16 is checked by REQUIRE_BF16_CPU), f32 otherwise.
void expect_bf16_in_effect() {
#ifdef SD_X86_KERNELS
    EXPECT_EQ(compute_type(), ComputeType::BF16);
#else
    EXPECT_EQ(compute_type(), ComputeType::F32);
#endif
}

// Checks one linear product in bf16 mode: bf16 path when supported (and M > 4), else f32.
void check_linear(const Tensor& x, const Tensor& w, const Tensor& b, const std::string& what) {
    const int64_t k = x.size(-1), m = x.numel() / std::max<int64_t>(k, 1);
    const Tensor wv = values_of(w.contiguous());
    const Tensor want_f32 = ref::linear(x, wv, b);
    ComputeScope scope(ComputeType::BF16);
    expect_bf16_in_effect();
    const Tensor got = linear(x, w, b);
    if (compute_type() != ComputeType::BF16 || m <= cpu::kDotRows) {
        test::expect_close(got, want_f32, atol_for(k), kRtol, what + " (f32 path)");
        return;
    }
    test::expect_close(got, ref::linear(bf16_rounded(x), bf16_rounded(wv), b), atol_for(k), kRtol,
                       what + " vs bf16-rounded ref");
    expect_within_bf16_bound(got, want_f32, ref::linear(abs_of(x), abs_of(wv)), atol_for(k),
                             what + " vs f32 ref");
}

std::string label(int64_t m, int64_t n, int64_t k, DType dtype) {
    return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) + " " +
           dtype_name(dtype);
}

TEST(Bf16Compute, LinearPlainWeights) {
    REQUIRE_BF16_CPU();
    // M >= N shares B, M < N shares the packed A; K odd, tiny, and past one k block.
    const int64_t ms[] = {1, 4, 5, 7, 66, 301};
    const int64_t ns[] = {1, 17, 64, 130};
    const int64_t ks[] = {1, 2, 3, 31, 33, 77, 1101};
    const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
    uint32_t seed = 1;
    for (int64_t m : ms) {
        for (int64_t n : ns) {
            for (int64_t k : ks) {
                const DType dtype = dtypes[seed % 3];
                Tensor x = test::random_tensor({m, k}, seed++);
                Tensor w = make_weight({n, k}, dtype, seed++);
                Tensor b = seed % 2 ? test::random_tensor({n}, seed++) : Tensor();
                check_linear(x, w, b, label(m, n, k, dtype));
            }
        }
    }
}

TEST(Bf16Compute, LinearBlockQuantWeights) {
    REQUIRE_BF16_CPU();
    uint32_t seed = 500;
    for (DType dtype : {DType::Q8_0, DType::Q4_K}) {
        const int64_t bs = block_size(dtype);
        for (int64_t k : {bs, 5 * bs}) {
            for (auto [m, n] : {std::pair<int64_t, int64_t>{3, 17}, {77, 100}, {130, 33}}) {
                Tensor x = test::random_tensor({m, k}, seed++);
                Tensor w = make_weight({n, k}, dtype, seed++);
                Tensor b = test::random_tensor({n}, seed++);
                check_linear(x, w, b, label(m, n, k, dtype));
            }
        }
    }
}

TEST(Bf16Compute, LinearStridedInput) {
    REQUIRE_BF16_CPU();
    // A non-contiguous input: A packed through the general strided packer.
    Tensor x = test::non_contiguous_copy(test::random_tensor({2, 19, 37}, 1));
    Tensor w = make_weight({70, 37}, DType::F16, 2);
    check_linear(x, w, test::random_tensor({70}, 3), "strided input");
}

TEST(Bf16Compute, Matmul) {
    REQUIRE_BF16_CPU();
    struct Case {
        Shape a, b;
    };
    const Case cases[] = {{{7, 17}, {17, 33}}, {{77, 101}, {101, 9}}, {{2, 130, 65}, {65, 129}}};
    uint32_t seed = 700;
    for (const Case& c : cases) {
        Tensor a = test::random_tensor(c.a, seed++);
        Tensor b = test::random_tensor(c.b, seed++);
        const int64_t k = c.a[c.a.size() - 1];
        const Tensor want_f32 = ref::matmul(a, b);
        const Tensor want_bf16 = ref::matmul(bf16_rounded(a), bf16_rounded(b));
        const Tensor bound = ref::matmul(abs_of(a), abs_of(b));
        ComputeScope scope(ComputeType::BF16);
        expect_bf16_in_effect();
        const std::string what = c.a.to_string() + " x " + c.b.to_string();
        // Contiguous, both strided (general packer, converted), b transposed (unit k stride).
        Tensor bt = b.transpose(-1, -2).contiguous().transpose(-1, -2);
        for (const auto& [ga, gb, how] :
             {std::tuple{a, b, "plain"},
              std::tuple{test::non_contiguous_copy(a), test::non_contiguous_copy(b), "strided"},
              std::tuple{a, bt, "b transposed"}}) {
            const Tensor got = matmul(ga, gb);
            if (compute_type() != ComputeType::BF16) {
                test::expect_close(got, want_f32, atol_for(k), kRtol, what + " (f32 path)");
                continue;
            }
            test::expect_close(got, want_bf16, atol_for(k), kRtol, what + " " + how);
            expect_within_bf16_bound(got, want_f32, bound, atol_for(k), what + " " + how);
        }
    }
}

TEST(Bf16Compute, Conv2dAllWeightTypes) {
    REQUIRE_BF16_CPU();
    struct Case {
        int64_t n, c, h, w, o, kh, kw;
        int stride, pad;
    };
    // 3x3 (patch gather: f32 panels converted), 1x1 (pointwise: strided B), stride 2,
    // K = C * KH * KW odd (27, 45) and past one k block (1170, 2304). Block-quant weights
    // need whole blocks in a kernel row: the 1 x 32 (q8_0) and 1 x 256 (q4_K) kernels.
    const Case cases[] = {{1, 3, 9, 11, 8, 3, 3, 1, 1},    {2, 5, 7, 6, 70, 3, 3, 2, 1},
                          {1, 64, 10, 9, 33, 3, 3, 1, 1},  {1, 130, 5, 7, 7, 3, 3, 1, 0},
                          {1, 256, 6, 5, 20, 3, 3, 1, 1},  {1, 33, 12, 13, 65, 1, 1, 1, 0},
                          {1, 3, 4, 40, 9, 1, 32, 1, 0},   {2, 5, 3, 37, 66, 1, 32, 1, 2},
                          {1, 2, 3, 260, 5, 1, 256, 1, 0}, {1, 5, 2, 258, 7, 1, 256, 1, 1}};
    const DType dtypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K};
    uint32_t seed = 900;
    for (const Case& t : cases) {
        for (DType dtype : dtypes) {
            const int64_t k = t.c * t.kh * t.kw;
            if (t.kw % block_size(dtype) != 0) continue;
            Tensor x = test::random_tensor({t.n, t.c, t.h, t.w}, seed++);
            Tensor w = make_weight({t.o, t.c, t.kh, t.kw}, dtype, seed++);
            Tensor b = test::random_tensor({t.o}, seed++);
            Conv2dOptions o;
            o.stride_h = o.stride_w = t.stride;
            o.pad_h = o.pad_w = t.pad;
            const Tensor wv = values_of(w);
            const std::string what = "conv " + x.shape().to_string() + " * " +
                                     w.shape().to_string() + " " + dtype_name(dtype);
            const Tensor want_f32 = ref::conv2d(x, wv, b, o);
            ComputeScope scope(ComputeType::BF16);
            expect_bf16_in_effect();
            const Tensor got = conv2d(x, w, b, o);
            if (compute_type() != ComputeType::BF16) {
                test::expect_close(got, want_f32, atol_for(k), kRtol, what + " (f32 path)");
                continue;
            }
            test::expect_close(got, ref::conv2d(bf16_rounded(x), bf16_rounded(wv), b, o),
                               atol_for(k), kRtol, what + " vs bf16-rounded ref");
            expect_within_bf16_bound(got, want_f32, ref::conv2d(abs_of(x), abs_of(wv), {}, o),
                                     atol_for(k), what + " vs f32 ref");
        }
    }
}

// Auto (the default): bf16 products for the weights stored in bf16 (linear and conv2d, the
// conv either as a GEMM or on the direct path), f32 for every other weight and for matmul.
TEST(Bf16Compute, AutoRoundsOnlyTheProductsOfBf16Weights) {
    REQUIRE_BF16_CPU();
    ComputeScope scope(ComputeType::Auto);
    ASSERT_EQ(compute_type(), bf16_compute_supported() ? ComputeType::Auto : ComputeType::F32);
    const bool bf16 = compute_type() == ComputeType::Auto;
    const Tensor x = test::random_tensor({50, 77}, 1), b = test::random_tensor({40}, 2);
    const Tensor img = test::random_tensor({1, 6, 9, 70}, 3), cb = test::random_tensor({8}, 4);
    Conv2dOptions o;
    o.pad_h = o.pad_w = 1;
    uint32_t seed = 10;
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        const bool rounded = bf16 && dtype == DType::BF16;
        const std::string what = std::string(dtype_name(dtype)) + (rounded ? " bf16" : " f32");
        const Tensor w = make_weight({40, 77}, dtype, seed++);
        test::expect_close(linear(x, w, b),
                           ref::linear(rounded ? bf16_rounded(x) : x, values_of(w), b),
                           atol_for(77), kRtol, "linear " + what);
        const Tensor cw = make_weight({8, 6, 3, 3}, dtype, seed++);
        test::expect_close(conv2d(img, cw, cb, o),
                           ref::conv2d(rounded ? bf16_rounded(img) : img, values_of(cw), cb, o),
                           atol_for(54), kRtol, "conv2d " + what);
    }
    // matmul's operands are activations: f32.
    const Tensor y = test::random_tensor({77, 30}, 20);
    test::expect_close(matmul(x, y), ref::matmul(x, y), atol_for(77), kRtol, "matmul");
}

TEST(Bf16Compute, LoweredKernelFamilyStaysF32) {
    REQUIRE_BF16_CPU();
    Tensor x = test::random_tensor({50, 77}, 1);
    Tensor w = make_weight({40, 77}, DType::F16, 2);
    const Tensor want = ref::linear(x, values_of(w));
    ComputeScope scope(ComputeType::BF16);
    for (Isa isa : test::available_isas()) {
        if (isa == Isa::Avx512) continue;
        test::IsaScope isa_scope(isa);
        test::expect_close(linear(x, w), want, atol_for(77), kRtol,
                           std::string("isa ") + isa_name(isa));
    }
}

}  // namespace
}  // namespace sd
