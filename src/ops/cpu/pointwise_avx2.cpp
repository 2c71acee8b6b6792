// The pointwise kernels for AVX2 + FMA: the loops of pointwise_kernels.h over 8-float
// vectors, with vmaskmovps for tails.
#include <immintrin.h>

#include "ops/cpu/pointwise_kernels.h"

namespace sd::cpu {
namespace {

struct Avx2Simd {
    using V = __m256;
    using M = __m256;
    static constexpr int kWidth = 8;
    static __m256i mask(int n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V load_partial(const float* p, int n, V fill) {
        __m256i m = mask(n);
        return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
    }
    static void store_partial(float* p, V v, int n) { _mm256_maskstore_ps(p, mask(n), v); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
    static V min(V a, V b) { return _mm256_min_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
    static V copysign(V mag, V sign) {
        const V sign_bit = _mm256_set1_ps(-0.0f);
        return _mm256_or_ps(_mm256_and_ps(sign_bit, sign), _mm256_andnot_ps(sign_bit, mag));
    }
    static V round(V x) {
        return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    // p * 2^n1 * 2^n2 with n1 = n >> 1, n2 = n - n1: both factors normal for |n| <= 160.
    static V ldexp(V p, V n) {
        __m256i k = _mm256_cvtps_epi32(n);
        __m256i k1 = _mm256_srai_epi32(k, 1);
        __m256i k2 = _mm256_sub_epi32(k, k1);
        return _mm256_mul_ps(_mm256_mul_ps(p, pow2(k1)), pow2(k2));
    }
    static M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
    static V select(M m, V a, V b) { return _mm256_blendv_ps(b, a, m); }
    static float reduce_add(V v) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    static float reduce_max(V v) {
        __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_max_ps(s, _mm_movehl_ps(s, s));
        s = _mm_max_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }

  private:
    static V pow2(__m256i k) {
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
    }
};

}  // namespace

extern const PointwiseKernels kPointwiseAvx2 = PointwiseLoops<Avx2Simd>::table();

}  // namespace sd::cpu
