// AVX-512 (F, BW, VL, DQ) dequantization: the kernels of dequantize_kernels.h with vectors of
// 16 floats (the byte decoding stays 256-bit); row tails are masked loads and stores.
#include <immintrin.h>

#include "tensor/dequantize_kernels.h"

namespace sd::quant {
namespace {

struct Avx512Vectors {
    using V = __m512;   // 16 floats
    using H = __m256i;  // 16 halves
    // Lanes [0, n) of a vector, n < 16: the tail of a row.
    static __mmask16 first_lanes(int n) { return static_cast<__mmask16>((1u << n) - 1); }

    static V i8_to_f32(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }
    static H load_h(const uint16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const H*>(p)); }
    static H load_h_partial(const uint16_t* p, int n) {
        return _mm256_maskz_loadu_epi16(first_lanes(n), p);
    }
    static V f16_to_f32(H h) { return _mm512_cvtph_ps(h); }
    // bf16 is the high half of an f32: widen and shift into place.
    static V bf16_to_f32(H h) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }

    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static void store_partial(float* p, V v, int n) { _mm512_mask_storeu_ps(p, first_lanes(n), v); }
};

}  // namespace

DequantizeFn avx512_dequantizer(DType type) {
    return dequantize_kernels::dequantizer<Avx512Vectors>(type);
}

}  // namespace sd::quant
