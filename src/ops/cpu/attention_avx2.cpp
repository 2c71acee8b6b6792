// AVX2 + FMA instantiation of the flash-attention tile kernel (tiling: attention_kernels.h).
// W = 8 keys per vector; microkernels of R = 4 rows x C = 3 vectors (12 accumulators in ymm
// registers, plus 3 operand vectors and one broadcast: all 16 registers).
#include <immintrin.h>

#define SD_ATTENTION_KERNEL_BODY
#include "ops/cpu/attention_kernels.h"

namespace sd::attn {
namespace {

struct Avx2Vec {
    static constexpr int kWidth = 8;
    static constexpr int kRows = 4;
    static constexpr int kCols = 3;
    using reg = __m256;
    static reg zero() { return _mm256_setzero_ps(); }
    static reg set1(float x) { return _mm256_set1_ps(x); }
    static reg load(const float* p) { return _mm256_loadu_ps(p); }
    static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, reg a) { _mm256_storeu_ps(p, a); }
    static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
    static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
    static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
    static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
    static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
    // 2^x for x <= 0: lanes with x < -126 (or -inf, NaN) give 0; otherwise n = round(x),
    // f = x - n in [-0.5, 0.5], p(f) ~ 2^f, and 2^n is added into p's exponent bits.
    template <bool kMayBeInf>  // handled either way
    static reg exp2(reg x) {
        const reg live = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_GE_OQ);
        x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
        const reg n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const reg f = _mm256_sub_ps(x, n);
        reg p = _mm256_set1_ps(kExp2C6);
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2C5));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2C4));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2C3));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2C2));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2C1));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
        const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
        const reg r = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
        return _mm256_and_ps(r, live);
    }
    static void pin(reg& x) { asm("" : "+v"(x)); }
    static float hsum(reg a) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    static float hmax(reg a) {
        __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        s = _mm_max_ps(s, _mm_movehl_ps(s, s));
        s = _mm_max_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
};

void run_block_avx2(const BlockArgs& args) {
    run_block<Avx2Vec>(args);
}

}  // namespace

AttnKernel attention_kernel_avx2() {
    return {Avx2Vec::kWidth, &run_block_avx2};
}

}  // namespace sd::attn
