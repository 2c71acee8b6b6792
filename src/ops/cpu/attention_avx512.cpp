// AVX-512 instantiation of the flash-attention tile kernel (tiling: attention_kernels.h).
// W = 16 keys per vector; microkernels of R = 8 rows x C = 3 vectors (24 accumulators in
// zmm registers, plus 3 operand vectors and one broadcast).
#include <immintrin.h>

#define SD_ATTENTION_KERNEL_BODY
#include "ops/cpu/attention_kernels.h"

namespace sd::attn {
namespace {

struct Avx512Vec {
    static constexpr int kWidth = 16;
    static constexpr int kRows = 8;
    static constexpr int kCols = 3;
    using reg = __m512;
    static reg zero() { return _mm512_setzero_ps(); }
    static reg set1(float x) { return _mm512_set1_ps(x); }
    static reg load(const float* p) { return _mm512_loadu_ps(p); }
    static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, reg a) { _mm512_storeu_ps(p, a); }
    static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
    static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
    static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
    static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
    static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
    // 2^x for x <= 0: n = round(x), f = x - n in [-0.5, 0.5], p(f) ~ 2^f, result =
    // scalef(p, n) = p * 2^n, which underflows to 0 for any finite x below ~-150. -inf would
    // give f = NaN, so where it may occur x is first clamped to -160 (NaN too: max returns
    // the second operand).
    template <bool kMayBeInf>
    static reg exp2(reg x) {
        if constexpr (kMayBeInf) x = _mm512_max_ps(x, _mm512_set1_ps(-160.0f));
        const reg n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const reg f = _mm512_sub_ps(x, n);
        reg p = _mm512_set1_ps(kExp2C6);
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2C5));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2C4));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2C3));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2C2));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2C1));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
        return _mm512_scalef_ps(p, n);
    }
    static void pin(reg& x) { asm("" : "+v"(x)); }
    static float hsum(reg a) { return _mm512_reduce_add_ps(a); }
    static float hmax(reg a) { return _mm512_reduce_max_ps(a); }
};

void run_block_avx512(const BlockArgs& args) {
    run_block<Avx512Vec>(args);
}

}  // namespace

AttnKernel attention_kernel_avx512() {
    return {Avx512Vec::kWidth, &run_block_avx512};
}

}  // namespace sd::attn
