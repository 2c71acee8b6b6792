#include <immintrin.h>

#include "peak_flops.h"

namespace sd::bench {

// 16 independent vdpbf16ps chains (each 16 lanes x 2 products = 64 FLOPs), as the f32 loop:
// enough to cover the instruction's latency on both pipes.
double dpbf16_loop_avx512(long iterations) {
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(0.999f));
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(1e-7f));
    for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
    __m512 sum = acc[0];
    for (int i = 1; i < 16; ++i) sum = _mm512_add_ps(sum, acc[i]);
    float lanes[16];
    _mm512_storeu_ps(lanes, sum);
    volatile float sink = lanes[0] + lanes[15];
    (void)sink;
    return static_cast<double>(iterations) * 16 * 16 * 2 * 2;
}

}  // namespace sd::bench
