#include <immintrin.h>

#include "peak_flops.h"

namespace sd::bench {

// 12 independent accumulators: enough to cover FMA latency x 2 pipes on current cores.
double fma_loop_avx2(long iterations) {
    __m256 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
    const __m256 a = _mm256_set1_ps(0.999999f);
    const __m256 b = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    __m256 sum = acc[0];
    for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, sum);
    volatile float sink = out[0];
    (void)sink;
    return static_cast<double>(iterations) * 12 * 8 * 2;
}

}  // namespace sd::bench
