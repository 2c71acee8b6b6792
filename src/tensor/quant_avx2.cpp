// AVX2 (+F16C) dequantization: the kernels of dequantize_kernels.h with vectors of 8 floats.
#include <immintrin.h>

#include <cstring>

#include "tensor/dequantize_kernels.h"

namespace sd::quant {
namespace {

struct Avx2Vectors {
    using V = __m256;   // 8 floats
    using H = __m128i;  // 8 halves

    static V i8_to_f32(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)); }

    // AVX2 has no 16-bit masked loads: a partial vector goes through a zeroed buffer.
    static H load_h(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const H*>(p)); }
    static H load_h_partial(const uint16_t* p, int n) {
        alignas(16) uint16_t buf[8] = {};
        std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(uint16_t));
        return _mm_load_si128(reinterpret_cast<const H*>(buf));
    }
    static V f16_to_f32(H h) { return _mm256_cvtph_ps(h); }
    // bf16 is the high half of an f32: widen and shift into place.
    static V bf16_to_f32(H h) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }

    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static void store_partial(float* p, V v, int n) {
        alignas(32) float buf[8];
        _mm256_store_ps(buf, v);
        std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
    }
};

}  // namespace

DequantizeFn avx2_dequantizer(DType type) {
    return dequantize_kernels::dequantizer<Avx2Vectors>(type);
}

}  // namespace sd::quant
