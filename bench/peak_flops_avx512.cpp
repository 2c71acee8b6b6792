#include <immintrin.h>

#include "peak_flops.h"

namespace sd::bench {

// 16 independent accumulators cover FMA latency (4 cycles) x 2 pipes x 2 with room to spare.
double fma_loop_avx512(long iterations) {
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
    const __m512 a = _mm512_set1_ps(0.999999f);
    const __m512 b = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    __m512 sum = acc[0];
    for (int i = 1; i < 16; ++i) sum = _mm512_add_ps(sum, acc[i]);
    volatile float sink = _mm512_reduce_add_ps(sum);
    (void)sink;
    return static_cast<double>(iterations) * 16 * 16 * 2;
}

}  // namespace sd::bench
