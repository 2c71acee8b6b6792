// Internal interface of the pointwise CPU kernels: the vector loops behind the activations,
// softmax, the norms' statistics and apply passes, elementwise binary ops and sums. Every
// loop works on packed (unit-stride) runs; the ops in src/ops/*.cpp handle strides,
// broadcasting and threads, and call these through the table for active_isa().
//
// The loops and the math are written once below, over a SIMD policy S that supplies the
// vector type and its operations. pointwise_avx512.cpp and pointwise_avx2.cpp instantiate
// them with their intrinsics; the generic table instantiates them with ScalarSimd (one float
// a "vector"), which the compiler may vectorise for the baseline ISA.
//
// Accuracy of the vector math (f32, relative to the exact value; measured over dense sweeps
// in tests/ops/activation_test.cpp, VectorMathAccuracySweep):
//   exp:      <= 1.5e-7 (about 2 ulp) on [-87, 88.7]; +inf above 88.72, 0 below -103.9,
//             denormal results in between rounded once; NaN stays NaN.
//   sigmoid, tanh, silu: <= 2.5e-7. No cancellation: x / (1 + exp(-x)) forms; tanh uses an
//             odd polynomial below |x| = 0.625.
//   quick_gelu, gelu(tanh): <= 2.5e-7 (1 + |a|), a = 1.702 x or 2u the exp's argument, which
//             is rounded to f32 before the exp (as any f32 evaluation does).
//   gelu(erf): <= 5e-7, the negative tail included: x Phi(x), Phi from erfc(z) = t Q(t)
//             exp(-z^2), t = 1 / (1 + z / 2), Q a degree-10 Chebyshev fit (error 8e-9),
//             z^2 split into hi + lo exactly so exp(-z^2) keeps its digits at large |z|.
//   Results below 1e-36 may flush to 0 (exp(-x) overflows in x / (1 + exp(-x)) before the
//   quotient leaves f32's normal range).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

#include "base/cpu_features.h"

namespace sd::cpu {

enum class UnaryKind : int { Gelu, GeluTanh, Silu, QuickGelu, Sigmoid, Tanh, Exp, kCount };
enum class BinaryKind : int { Add, Sub, Mul, Div, kCount };
constexpr int kUnaryKinds = static_cast<int>(UnaryKind::kCount);
constexpr int kBinaryKinds = static_cast<int>(BinaryKind::kCount);

// Values per block of the statistics kernels: small enough to stay in L1 between the two
// passes over it, large enough that combining blocks in double costs nothing.
constexpr int64_t kStatsBlock = 2048;

using UnaryFn = void (*)(const float* x, float* y, int64_t n);
using BinaryFn = void (*)(const float* a, const float* b, float* y, int64_t n);
using BinaryScalarFn = void (*)(const float* a, float s, float* y, int64_t n);

// A double mean as hi + lo floats: x - mean is computed as (x - hi) - lo, where x - hi is
// exact for x near the mean, so normalising values with a large mean loses nothing.
struct SplitMean {
    float hi = 0, lo = 0;
    static SplitMean of(double m) {
        const float hi = static_cast<float>(m);
        return {hi, static_cast<float>(m - static_cast<double>(hi))};
    }
};

struct PointwiseKernels {
    UnaryFn unary[kUnaryKinds];
    BinaryFn binary[kBinaryKinds];           // y = a op b
    BinaryScalarFn binary_rs[kBinaryKinds];  // y = a op s
    BinaryScalarFn binary_ls[kBinaryKinds];  // y = s op a
    void (*clamp)(const float* x, float* y, int64_t n, float lo, float hi);
    void (*geglu)(const float* a, const float* gate, float* y, int64_t n);  // a * gelu(gate)
    void (*softmax)(const float* x, float* y, int64_t n);                   // one row, n >= 1
    // Sum of x[0, n) and the sum of squared deviations from its mean; n <= kStatsBlock.
    // Sums run over x - x[0], so a large common offset costs no precision.
    void (*block_stats)(const float* x, int64_t n, double* sum, double* m2);
    // Sum of x[0, n), accumulated in f32 lanes per block and in double across blocks.
    double (*sum)(const float* x, int64_t n);
    // y = (x - mean) * scale + shift, then SiLU when the second entry is used.
    void (*norm_apply[2])(const float* x, float* y, int64_t n, SplitMean mean, float scale,
                          float shift);
    // y = (x - mean) * rstd * w + b; w, b may be null (1 and 0).
    void (*layer_norm_apply)(const float* x, float* y, int64_t n, SplitMean mean, float rstd,
                             const float* w, const float* b);
};

// The table of active_isa() / of one family (lowered to what the build and CPU support).
const PointwiseKernels& pointwise_kernels();
const PointwiseKernels& pointwise_kernels(Isa isa);

#ifdef SD_X86_KERNELS
extern const PointwiseKernels kPointwiseAvx2;
extern const PointwiseKernels kPointwiseAvx512;
#endif

// ---------------------------------------------------------------------------------------
// The policy for the generic path: a "vector" of one float. min/max follow the x86
// instructions (the second operand when either is NaN) so NaN handling matches everywhere.
struct ScalarSimd {
    using V = float;
    using M = bool;
    static constexpr int kWidth = 1;
    static V load(const float* p) { return *p; }
    static void store(float* p, V v) { *p = v; }
    static V load_partial(const float* p, int n, V fill) { return n > 0 ? *p : fill; }
    static void store_partial(float* p, V v, int n) {
        if (n > 0) *p = v;
    }
    static V set1(float x) { return x; }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V mul(V a, V b) { return a * b; }
    static V div(V a, V b) { return a / b; }
    static V fmadd(V a, V b, V c) { return a * b + c; }
    static V fnmadd(V a, V b, V c) { return c - a * b; }
    static V min(V a, V b) { return select(a < b, a, b); }
    static V max(V a, V b) { return select(a > b, a, b); }
    static V abs(V a) { return std::fabs(a); }
    static V copysign(V mag, V sign) { return std::copysign(mag, sign); }
    // Round to nearest even, |x| < 2^22.
    static V round(V x) { return (x + 12582912.0f) - 12582912.0f; }
    // p * 2^n for integral n in [-160, 160], one rounding. The integer comes from the bits
    // of n + 1.5 * 2^23 (no float-to-int conversion, so NaN is harmless and the loop
    // stays branch-free for the vectoriser).
    static V ldexp(V p, V n) {
        const int32_t k = std::bit_cast<int32_t>(n + 12582912.0f) - 0x4B400000;
        const int32_t k1 = k >> 1;
        return p * pow2(k1) * pow2(k - k1);
    }
    static M lt(V a, V b) { return a < b; }
    // m ? a : b by bit masks: a plain ?: lets GCC turn later float ops into branches, which
    // keeps the loops from being vectorised.
    static V select(M m, V a, V b) {
        const uint32_t mask = 0u - static_cast<uint32_t>(m);
        return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & mask) |
                                    (std::bit_cast<uint32_t>(b) & ~mask));
    }
    static float reduce_add(V v) { return v; }
    static float reduce_max(V v) { return v; }

  private:
    static V pow2(int32_t k) {
        return std::bit_cast<float>((static_cast<uint32_t>(k) + 127u) << 23);
    }
};

// ---------------------------------------------------------------------------------------
// Math over a policy.
namespace simd {

template <class S>
using Vec = typename S::V;

// Horner evaluation of c[0] * x^(N-1) + ... + c[N-1].
template <class S, size_t N>
inline Vec<S> poly(Vec<S> x, const std::array<float, N>& c) {
    Vec<S> r = S::set1(c[0]);
    for (size_t i = 1; i < N; ++i) r = S::fmadd(r, x, S::set1(c[i]));
    return r;
}

// exp(x): x = n ln2 + r, |r| <= ln2 / 2, e^r by a degree-6 Chebyshev fit (error 2e-9),
// times 2^n with one rounding. x is clamped to [-110, 88.8] first (NaN passes through).
template <class S>
inline Vec<S> exp(Vec<S> x) {
    static constexpr std::array<float, 7> kExp = {1.394110843e-03f,
                                                  8.375126398e-03f,
                                                  4.166635290e-02f,
                                                  1.666641551e-01f,
                                                  5.000000047e-01f,
                                                  1.000000038e+00f,
                                                  1.0f};
    x = S::min(S::set1(88.8f), S::max(S::set1(-110.0f), x));
    Vec<S> n = S::round(S::mul(x, S::set1(1.44269504088896341f)));
    Vec<S> r = S::fnmadd(n, S::set1(0.693359375f), x);  // ln2 = 0.693359375 - 2.12194440e-4
    r = S::fnmadd(n, S::set1(-2.12194440e-4f), r);
    return S::ldexp(poly<S>(r, kExp), n);
}

// 1 / (1 + exp(-x)) scaled by num: num / (1 + exp(-k x)).
template <class S>
inline Vec<S> div_one_plus_exp_neg(Vec<S> num, Vec<S> kx) {
    Vec<S> one = S::set1(1.0f);
    return S::div(num, S::add(one, exp<S>(S::sub(S::set1(0.0f), kx))));
}

template <class S>
inline Vec<S> sigmoid(Vec<S> x) {
    return div_one_plus_exp_neg<S>(S::set1(1.0f), x);
}

template <class S>
inline Vec<S> silu(Vec<S> x) {
    return div_one_plus_exp_neg<S>(x, x);
}

template <class S>
inline Vec<S> quick_gelu(Vec<S> x) {
    return div_one_plus_exp_neg<S>(x, S::mul(x, S::set1(1.702f)));
}

// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
template <class S>
inline Vec<S> gelu_tanh(Vec<S> x) {
    Vec<S> x2 = S::mul(x, x);
    Vec<S> inner = S::fmadd(x2, S::set1(0.044715f), S::set1(1.0f));
    Vec<S> two_u = S::mul(S::mul(x, inner), S::set1(2.0f * 0.7978845608028654f));
    return div_one_plus_exp_neg<S>(x, two_u);
}

template <class S>
inline Vec<S> tanh(Vec<S> x) {
    // tanh(a) / a as a polynomial in a^2 on [0, 0.625^2] (degree-6 Chebyshev fit, 1.5e-10).
    static constexpr std::array<float, 7> kSmall = {2.127435363e-03f,
                                                    -8.157853372e-03f,
                                                    2.169126532e-02f,
                                                    -5.394458468e-02f,
                                                    1.333318175e-01f,
                                                    -3.333332966e-01f,
                                                    1.0f};
    Vec<S> one = S::set1(1.0f);
    Vec<S> a = S::abs(x);
    Vec<S> small = S::mul(a, poly<S>(S::mul(a, a), kSmall));
    Vec<S> e = exp<S>(S::add(a, a));
    Vec<S> big = S::sub(one, S::div(S::set1(2.0f), S::add(e, one)));
    return S::copysign(S::select(S::lt(a, S::set1(0.625f)), small, big), x);
}

// x * Phi(x), Phi(x) = erfc(-x / sqrt2) / 2, with erfc(z) = t Q(t) exp(-z^2) for z >= 0.
template <class S>
inline Vec<S> gelu(Vec<S> x) {
    // Q(t) = erfc(z) exp(z^2) / t, t = 1 / (1 + z / 2): degree-10 Chebyshev fit on [0, 1].
    static constexpr std::array<float, 11> kQ = {
        4.535133662e-02f, -2.455800363e-01f, 5.168995401e-01f, -4.824747605e-01f,
        1.518851796e-01f, -6.795827531e-02f, 9.582719939e-02f, 1.749485963e-01f,
        2.469135612e-01f, 2.820928673e-01f,  2.820947997e-01f};
    Vec<S> half = S::set1(0.5f);
    Vec<S> one = S::set1(1.0f);
    // Beyond |x| = 20 erfc is 0 in f32; clamping keeps x^2 finite (NaN passes through).
    Vec<S> a = S::min(S::set1(20.0f), S::abs(x));
    Vec<S> z = S::mul(a, S::set1(0.70710678118654752f));
    Vec<S> t = S::div(one, S::fmadd(z, half, one));
    // exp(-a^2 / 2) = exp(-hi / 2) (1 - lo / 2) with hi = fl(a^2) and lo = a^2 - hi exactly
    // (Dekker's product: a split into 12-bit halves whose products are exact, no FMA needed).
    Vec<S> c = S::mul(a, S::set1(4097.0f));
    Vec<S> ah = S::sub(c, S::sub(c, a));
    Vec<S> al = S::sub(a, ah);
    Vec<S> hi = S::mul(a, a);
    Vec<S> lo = S::sub(S::mul(ah, ah), hi);
    lo = S::add(S::add(lo, S::mul(S::add(ah, ah), al)), S::mul(al, al));
    Vec<S> g = S::mul(exp<S>(S::mul(hi, S::set1(-0.5f))), S::fnmadd(lo, half, one));
    Vec<S> half_erfc = S::mul(S::mul(t, poly<S>(t, kQ)), S::mul(g, half));
    Vec<S> phi = S::select(S::lt(x, S::set1(0.0f)), half_erfc, S::sub(one, half_erfc));
    return S::mul(x, phi);
}

template <class S, UnaryKind K>
inline Vec<S> unary(Vec<S> x) {
    if constexpr (K == UnaryKind::Gelu) return gelu<S>(x);
    if constexpr (K == UnaryKind::GeluTanh) return gelu_tanh<S>(x);
    if constexpr (K == UnaryKind::Silu) return silu<S>(x);
    if constexpr (K == UnaryKind::QuickGelu) return quick_gelu<S>(x);
    if constexpr (K == UnaryKind::Sigmoid) return sigmoid<S>(x);
    if constexpr (K == UnaryKind::Tanh) return tanh<S>(x);
    if constexpr (K == UnaryKind::Exp) return exp<S>(x);
}

template <class S, BinaryKind K>
inline Vec<S> binary(Vec<S> a, Vec<S> b) {
    if constexpr (K == BinaryKind::Add) return S::add(a, b);
    if constexpr (K == BinaryKind::Sub) return S::sub(a, b);
    if constexpr (K == BinaryKind::Mul) return S::mul(a, b);
    if constexpr (K == BinaryKind::Div) return S::div(a, b);
}

}  // namespace simd

// ---------------------------------------------------------------------------------------
// Loops over packed runs, tails through the policy's masked load/store.
template <class S>
struct PointwiseLoops {
    using V = typename S::V;
    static constexpr int W = S::kWidth;

    // y[i] = f(x[i]), two vectors an iteration so independent chains overlap. The padding
    // lanes of a partial last vector read as `fill`.
    template <class F>
    static void map1(const float* x, float* y, int64_t n, F f, float fill = 0.0f) {
        int64_t i = 0;
        for (; i + 2 * W <= n; i += 2 * W) {
            V u = f(S::load(x + i));
            V v = f(S::load(x + i + W));
            S::store(y + i, u);
            S::store(y + i + W, v);
        }
        for (; i + W <= n; i += W) S::store(y + i, f(S::load(x + i)));
        if (i < n) {
            int r = static_cast<int>(n - i);
            S::store_partial(y + i, f(S::load_partial(x + i, r, S::set1(fill))), r);
        }
    }

    // y[i] = f(a[i], b[i]).
    template <class F>
    static void map2(const float* a, const float* b, float* y, int64_t n, F f) {
        int64_t i = 0;
        for (; i + 2 * W <= n; i += 2 * W) {
            V u = f(S::load(a + i), S::load(b + i));
            V v = f(S::load(a + i + W), S::load(b + i + W));
            S::store(y + i, u);
            S::store(y + i + W, v);
        }
        for (; i + W <= n; i += W) S::store(y + i, f(S::load(a + i), S::load(b + i)));
        if (i < n) {
            int r = static_cast<int>(n - i);
            V zero = S::set1(0.0f);
            S::store_partial(
                y + i, f(S::load_partial(a + i, r, zero), S::load_partial(b + i, r, zero)), r);
        }
    }

    // Reduces x[0, n) with acc = f(acc, v) over four accumulators (padding lanes read as
    // `fill`), which merge(a, b) then joins.
    template <class F, class Merge>
    static V fold(const float* x, int64_t n, V init, float fill, F f, Merge merge) {
        V acc[4] = {init, init, init, init};
        int64_t i = 0;
        for (; i + 4 * W <= n; i += 4 * W) {
            for (int j = 0; j < 4; ++j) acc[j] = f(acc[j], S::load(x + i + j * W));
        }
        for (; i + W <= n; i += W) acc[0] = f(acc[0], S::load(x + i));
        if (i < n)
            acc[1] = f(acc[1], S::load_partial(x + i, static_cast<int>(n - i), S::set1(fill)));
        return merge(merge(acc[0], acc[1]), merge(acc[2], acc[3]));
    }

    static V add(V a, V b) { return S::add(a, b); }

    template <UnaryKind K>
    static void unary(const float* x, float* y, int64_t n) {
        map1(x, y, n, [](V v) { return simd::unary<S, K>(v); });
    }

    template <BinaryKind K>
    static void binary(const float* a, const float* b, float* y, int64_t n) {
        map2(a, b, y, n, [](V u, V v) { return simd::binary<S, K>(u, v); });
    }

    template <BinaryKind K>
    static void binary_rs(const float* a, float s, float* y, int64_t n) {
        V sv = S::set1(s);
        map1(a, y, n, [sv](V u) { return simd::binary<S, K>(u, sv); });
    }

    template <BinaryKind K>
    static void binary_ls(const float* a, float s, float* y, int64_t n) {
        V sv = S::set1(s);
        map1(a, y, n, [sv](V u) { return simd::binary<S, K>(sv, u); });
    }

    static void clamp(const float* x, float* y, int64_t n, float lo, float hi) {
        V lv = S::set1(lo), hv = S::set1(hi);
        // max(lo, x) and min(hi, .) return x when it is NaN, as torch.clamp propagates NaN.
        map1(x, y, n, [lv, hv](V v) { return S::min(hv, S::max(lv, v)); });
    }

    static void geglu(const float* a, const float* gate, float* y, int64_t n) {
        map2(a, gate, y, n, [](V u, V g) { return S::mul(u, simd::gelu<S>(g)); });
    }

    static void softmax(const float* x, float* y, int64_t n) {
        auto vmax = [](V acc, V v) { return S::max(acc, v); };
        const float m = S::reduce_max(fold(x, n, S::set1(-INFINITY), -INFINITY, vmax, vmax));
        // m = -inf (every value -inf) gives exp(NaN) = NaN everywhere, as torch does.
        // One pass for exp(x - m) and its sum; padding lanes read -inf and add exp(-inf) = 0.
        V mv = S::set1(m), acc = S::set1(0.0f);
        map1(
            x, y, n,
            [mv, &acc](V v) {
                V e = simd::exp<S>(S::sub(v, mv));
                acc = S::add(acc, e);
                return e;
            },
            -INFINITY);
        V inv = S::set1(1.0f / S::reduce_add(acc));
        map1(y, y, n, [inv](V v) { return S::mul(v, inv); });
    }

    static void block_stats(const float* x, int64_t n, double* sum, double* m2) {
        const float pivot = x[0];
        V pv = S::set1(pivot);
        auto vadd = [pv](V acc, V v) { return S::add(acc, S::sub(v, pv)); };
        const double shifted = S::reduce_add(fold(x, n, S::set1(0.0f), pivot, vadd, add));
        const double mean = static_cast<double>(pivot) + shifted / static_cast<double>(n);
        const float mf = static_cast<float>(mean);
        V mv = S::set1(mf);
        auto vsq = [mv](V acc, V v) {
            V d = S::sub(v, mv);
            return S::fmadd(d, d, acc);
        };
        const double q = S::reduce_add(fold(x, n, S::set1(0.0f), mf, vsq, add));
        // Sum (x - mean)^2 = Sum (x - mf)^2 - n (mean - mf)^2.
        const double dm = mean - static_cast<double>(mf);
        *sum = mean * static_cast<double>(n);
        *m2 = std::max(0.0, q - static_cast<double>(n) * dm * dm);
    }

    static double sum(const float* x, int64_t n) {
        auto vadd = [](V acc, V v) { return S::add(acc, v); };
        double total = 0.0;
        for (int64_t i = 0; i < n; i += kStatsBlock) {
            const int64_t m = std::min(kStatsBlock, n - i);
            total += S::reduce_add(fold(x + i, m, S::set1(0.0f), 0.0f, vadd, vadd));
        }
        return total;
    }

    // (x - hi) - lo: see SplitMean.
    static V centre(V v, V hi, V lo) { return S::sub(S::sub(v, hi), lo); }

    template <bool Silu>
    static void norm_apply(const float* x, float* y, int64_t n, SplitMean mean, float scale,
                           float shift) {
        V hi = S::set1(mean.hi), lo = S::set1(mean.lo), sv = S::set1(scale), hv = S::set1(shift);
        map1(x, y, n, [=](V v) {
            V r = S::fmadd(centre(v, hi, lo), sv, hv);
            if constexpr (Silu) r = simd::silu<S>(r);
            return r;
        });
    }

    // Loads p[at, at + r): a whole vector, or a partial one (zero-padded) when r < W.
    static V load_n(const float* p, int64_t at, int r) {
        return r < W ? S::load_partial(p + at, r, S::set1(0.0f)) : S::load(p + at);
    }

    template <bool HasW, bool HasB>
    static void layer_norm_apply_wb(const float* x, float* y, int64_t n, SplitMean mean, float rstd,
                                    const float* w, const float* b) {
        V hi = S::set1(mean.hi), lo = S::set1(mean.lo), rv = S::set1(rstd);
        auto one = [&](int64_t at, int r) {
            V t = S::mul(centre(load_n(x, at, r), hi, lo), rv);
            if constexpr (HasW) t = S::mul(t, load_n(w, at, r));
            if constexpr (HasB) t = S::add(t, load_n(b, at, r));
            return t;
        };
        int64_t i = 0;
        for (; i + W <= n; i += W) S::store(y + i, one(i, W));
        if (i < n) {
            int r = static_cast<int>(n - i);
            S::store_partial(y + i, one(i, r), r);
        }
    }

    static void layer_norm_apply(const float* x, float* y, int64_t n, SplitMean mean, float rstd,
                                 const float* w, const float* b) {
        if (w && b) return layer_norm_apply_wb<true, true>(x, y, n, mean, rstd, w, b);
        if (w) return layer_norm_apply_wb<true, false>(x, y, n, mean, rstd, w, b);
        if (b) return layer_norm_apply_wb<false, true>(x, y, n, mean, rstd, w, b);
        layer_norm_apply_wb<false, false>(x, y, n, mean, rstd, w, b);
    }

    template <size_t... I>
    static constexpr void fill(PointwiseKernels& k, std::index_sequence<I...>) {
        ((k.unary[I] = &unary<static_cast<UnaryKind>(I)>), ...);
    }
    template <size_t... I>
    static constexpr void fill_binary(PointwiseKernels& k, std::index_sequence<I...>) {
        ((k.binary[I] = &binary<static_cast<BinaryKind>(I)>), ...);
        ((k.binary_rs[I] = &binary_rs<static_cast<BinaryKind>(I)>), ...);
        ((k.binary_ls[I] = &binary_ls<static_cast<BinaryKind>(I)>), ...);
    }

    static constexpr PointwiseKernels table() {
        PointwiseKernels k{};
        fill(k, std::make_index_sequence<kUnaryKinds>());
        fill_binary(k, std::make_index_sequence<kBinaryKinds>());
        k.clamp = &clamp;
        k.geglu = &geglu;
        k.softmax = &softmax;
        k.block_stats = &block_stats;
        k.sum = &sum;
        k.norm_apply[0] = &norm_apply<false>;
        k.norm_apply[1] = &norm_apply<true>;
        k.layer_norm_apply = &layer_norm_apply;
        return k;
    }
};

}  // namespace sd::cpu
