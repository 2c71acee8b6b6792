// The pointwise kernels for AVX-512 (F, DQ): the loops of pointwise_kernels.h over 16-float
// vectors, with masked loads and stores for tails and vscalefps for exp's 2^n.
// GCC 12 warns about the deliberately undefined pass-through operand inside its own
// AVX-512 intrinsics (_mm512_undefined_ps); a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include "ops/cpu/pointwise_kernels.h"

namespace sd::cpu {
namespace {

struct Avx512Simd {
    using V = __m512;
    using M = __mmask16;
    static constexpr int kWidth = 16;
    static M mask(int n) { return static_cast<M>((1u << n) - 1u); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V load_partial(const float* p, int n, V fill) {
        return _mm512_mask_loadu_ps(fill, mask(n), p);
    }
    static void store_partial(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
    static V min(V a, V b) { return _mm512_min_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V abs(V a) { return _mm512_abs_ps(a); }
    static V copysign(V mag, V sign) {
        const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(0x80000000u));
        // bits = (sign & sign_bit) | (mag & ~sign_bit)
        return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(sign_bit, _mm512_castps_si512(sign),
                                                             _mm512_castps_si512(mag), 0xca));
    }
    static V round(V x) {
        return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    static V ldexp(V p, V n) { return _mm512_scalef_ps(p, n); }
    static M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
    static V select(M m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }
    static float reduce_add(V v) { return _mm512_reduce_add_ps(v); }
    static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
};

}  // namespace

extern const PointwiseKernels kPointwiseAvx512 = PointwiseLoops<Avx512Simd>::table();

}  // namespace sd::cpu
