// AVX2 (+F16C) dequantization. Each kernel decodes a block's quants into 32 signed bytes
// in element order, then converts 8 at a time and applies the block's scales with the
// same f32 operations, in the same order, as the reference (a mul, then a separate
// sub / add: never an FMA, whose single rounding would change the last bit).
#include <immintrin.h>

#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace sd::quant {
namespace {
namespace kernels {

// How a block turns its quants q into values: d * q, d * q - m or d * q + m.
enum class Affine { None, Sub, Add };

template <Affine A>
inline __m256 apply8(__m256 d, __m128i q8, __m256 m) {
    __m256 y = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)));
    if constexpr (A == Affine::Sub) y = _mm256_sub_ps(y, m);
    if constexpr (A == Affine::Add) y = _mm256_add_ps(y, m);
    return y;
}

// 16 values from the 16 signed bytes of q.
template <Affine A>
inline void store16(float* y, __m128i q, __m256 d, __m256 m) {
    _mm256_storeu_ps(y, apply8<A>(d, q, m));
    _mm256_storeu_ps(y + 8, apply8<A>(d, _mm_srli_si128(q, 8), m));
}

// 32 values: the first 16 quants with (d0, m0), the last 16 with (d1, m1).
template <Affine A>
inline void store32(float* y, __m256i q, __m256 d0, __m256 m0, __m256 d1, __m256 m1) {
    store16<A>(y, _mm256_castsi256_si128(q), d0, m0);
    store16<A>(y + 16, _mm256_extracti128_si256(q, 1), d1, m1);
}

template <Affine A>
inline void store32(float* y, __m256i q, __m256 d, __m256 m) {
    store32<A>(y, q, d, m, d, m);
}

inline __m256i load32(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Byte-wise shift right and mask (AVX2 has no 8-bit shifts).
inline __m256i bits_at(__m256i v, int shift, int mask) {
    return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(static_cast<char>(mask)));
}

// 16 bytes of nibbles -> 32 quants: low nibbles are elements 0..15, high nibbles 16..31.
inline __m256i split_nibbles(const uint8_t* p) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(b, mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
    return _mm256_set_m128i(hi, lo);
}

// Bit j of `bits` -> byte j equal to `value` (or 0).
inline __m256i spread_bits(uint32_t bits, char value) {
    const __m256i pick =
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), pick);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_and_si256(v, _mm256_set1_epi8(value));
}

// Bytes of v that have `bit` set -> `value`, others 0.
inline __m256i select_bit(__m256i v, int bit, char value) {
    const __m256i b = _mm256_set1_epi8(static_cast<char>(bit));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, b), b), _mm256_set1_epi8(value));
}

inline __m256i iq4_table() {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
    return _mm256_set_m128i(t, t);
}

// ---- plain types ----

void dequantize_f16(const void* src, float* dst, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i,
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    }
    if (i < n) {
        // Tail through a buffer so every value goes through the same conversion.
        alignas(16) uint16_t buf[8] = {};
        alignas(32) float out[8];
        std::memcpy(buf, s + i, static_cast<size_t>(n - i) * 2);
        _mm256_store_ps(out,
                        _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(buf))));
        std::memcpy(dst + i, out, static_cast<size_t>(n - i) * 4);
    }
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i h =
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    }
    for (; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + i, 2);  // a row may start at an odd address
        dst[i] = bf16_to_f32(h);
    }
}

// ---- 32-value blocks ----

void dequantize_q8_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ8_0*>(src);
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const __m256 d = _mm256_set1_ps(f16_to_f32(b[i].d));
        store32<Affine::None>(dst, load32(reinterpret_cast<const uint8_t*>(b[i].qs)), d, zero);
    }
}

void dequantize_q4_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ4_0*>(src);
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const __m256 d = _mm256_set1_ps(f16_to_f32(b[i].d));
        const __m256i q = _mm256_sub_epi8(split_nibbles(b[i].qs), _mm256_set1_epi8(8));
        store32<Affine::None>(dst, q, d, zero);
    }
}

void dequantize_q4_1(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const __m256 d = _mm256_set1_ps(f16_to_f32(b[i].d));
        const __m256 m = _mm256_set1_ps(f16_to_f32(b[i].m));
        store32<Affine::Add>(dst, split_nibbles(b[i].qs), d, m);
    }
}

void dequantize_q5_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ5_0*>(src);
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const __m256 d = _mm256_set1_ps(f16_to_f32(b[i].d));
        __m256i q = _mm256_or_si256(split_nibbles(b[i].qs), spread_bits(load_u32(b[i].qh), 0x10));
        q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
        store32<Affine::None>(dst, q, d, zero);
    }
}

void dequantize_q5_1(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const __m256 d = _mm256_set1_ps(f16_to_f32(b[i].d));
        const __m256 m = _mm256_set1_ps(f16_to_f32(b[i].m));
        const __m256i q =
            _mm256_or_si256(split_nibbles(b[i].qs), spread_bits(load_u32(b[i].qh), 0x10));
        store32<Affine::Add>(dst, q, d, m);
    }
}

void dequantize_iq4_nl(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockIQ4_NL*>(src);
    const __m256i table = iq4_table();
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const __m256 d = _mm256_set1_ps(f16_to_f32(b[i].d));
        store32<Affine::None>(dst, _mm256_shuffle_epi8(table, split_nibbles(b[i].qs)), d, zero);
    }
}

// ---- 256-value super-blocks ----

void dequantize_q2_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ2_K*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        const float dmin = f16_to_f32(b[i].dmin);
        float dl[16], ml[16];
        for (int s = 0; s < 16; ++s) {
            dl[s] = d * static_cast<float>(b[i].scales[s] & 0xF);
            ml[s] = dmin * static_cast<float>(b[i].scales[s] >> 4);
        }
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = load32(b[i].qs + 32 * h);
            for (int k = 0; k < 4; ++k) {
                const int s = 8 * h + 2 * k;
                store32<Affine::Sub>(dst + 128 * h + 32 * k, bits_at(qs, 2 * k, 3),
                                     _mm256_set1_ps(dl[s]), _mm256_set1_ps(ml[s]),
                                     _mm256_set1_ps(dl[s + 1]), _mm256_set1_ps(ml[s + 1]));
            }
        }
    }
}

void dequantize_q3_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ3_K*>(src);
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        float dl[16];
        for (int s = 0; s < 16; ++s)
            dl[s] = d * static_cast<float>(scale_q3_k(s, b[i].scales) - 32);
        const __m256i hmask = load32(b[i].hmask);
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = load32(b[i].qs + 32 * h);
            for (int k = 0; k < 4; ++k) {
                // q - 4 unless the high bit is set: subtract 4 where the hmask bit is clear.
                const __m256i high = select_bit(hmask, 1 << (4 * h + k), 4);
                const __m256i q = _mm256_sub_epi8(bits_at(qs, 2 * k, 3),
                                                  _mm256_xor_si256(high, _mm256_set1_epi8(4)));
                const int s = 8 * h + 2 * k;
                store32<Affine::None>(dst + 128 * h + 32 * k, q, _mm256_set1_ps(dl[s]), zero,
                                      _mm256_set1_ps(dl[s + 1]), zero);
            }
        }
    }
}

// q4_K and q5_K share everything but the fifth bit.
template <bool kFifthBit, class Block>
void dequantize_k4(const Block* b, float* dst, int64_t nblocks) {
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        const float dmin = f16_to_f32(b[i].dmin);
        __m256i qh = _mm256_setzero_si256();
        if constexpr (kFifthBit) qh = load32(b[i].qh);
        for (int c = 0; c < 4; ++c) {
            const __m256i qs = load32(b[i].qs + 32 * c);
            for (int half = 0; half < 2; ++half) {
                const int s = 2 * c + half;
                uint8_t sc, m;
                scale_min_k4(s, b[i].scales, &sc, &m);
                __m256i q = bits_at(qs, 4 * half, 0x0F);
                if constexpr (kFifthBit) q = _mm256_or_si256(q, select_bit(qh, 1 << s, 0x10));
                store32<Affine::Sub>(dst + 32 * s, q, _mm256_set1_ps(d * static_cast<float>(sc)),
                                     _mm256_set1_ps(dmin * static_cast<float>(m)));
            }
        }
    }
}

void dequantize_q4_K(const void* src, float* dst, int64_t nblocks) {
    dequantize_k4<false>(static_cast<const BlockQ4_K*>(src), dst, nblocks);
}

void dequantize_q5_K(const void* src, float* dst, int64_t nblocks) {
    dequantize_k4<true>(static_cast<const BlockQ5_K*>(src), dst, nblocks);
}

void dequantize_q6_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ6_K*>(src);
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        float dl[16];
        for (int s = 0; s < 16; ++s) dl[s] = d * static_cast<float>(b[i].scales[s]);
        for (int h = 0; h < 2; ++h) {
            const __m256i ql[2] = {load32(b[i].ql + 64 * h), load32(b[i].ql + 64 * h + 32)};
            const __m256i qh = load32(b[i].qh + 32 * h);
            for (int k = 0; k < 4; ++k) {
                const __m256i low = bits_at(ql[k % 2], 4 * (k / 2), 0x0F);
                const __m256i high = _mm256_slli_epi16(bits_at(qh, 2 * k, 3), 4);
                const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(32));
                const int s = 8 * h + 2 * k;
                store32<Affine::None>(dst + 128 * h + 32 * k, q, _mm256_set1_ps(dl[s]), zero,
                                      _mm256_set1_ps(dl[s + 1]), zero);
            }
        }
    }
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockIQ4_XS*>(src);
    const __m256i table = iq4_table();
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        for (int s = 0; s < 8; ++s) {
            const __m256 dl = _mm256_set1_ps(d * static_cast<float>(scale_iq4_xs(s, b[i]) - 32));
            const __m256i q = _mm256_shuffle_epi8(table, split_nibbles(b[i].qs + 16 * s));
            store32<Affine::None>(dst + 32 * s, q, dl, zero);
        }
    }
}

}  // namespace kernels
}  // namespace

DequantizeFn avx2_dequantizer(DType type) {
    switch (type) {
        case DType::F16:
            return kernels::dequantize_f16;
        case DType::BF16:
            return kernels::dequantize_bf16;
        case DType::Q4_0:
            return kernels::dequantize_q4_0;
        case DType::Q4_1:
            return kernels::dequantize_q4_1;
        case DType::Q5_0:
            return kernels::dequantize_q5_0;
        case DType::Q5_1:
            return kernels::dequantize_q5_1;
        case DType::Q8_0:
            return kernels::dequantize_q8_0;
        case DType::IQ4_NL:
            return kernels::dequantize_iq4_nl;
        case DType::Q2_K:
            return kernels::dequantize_q2_K;
        case DType::Q3_K:
            return kernels::dequantize_q3_K;
        case DType::Q4_K:
            return kernels::dequantize_q4_K;
        case DType::Q5_K:
            return kernels::dequantize_q5_K;
        case DType::Q6_K:
            return kernels::dequantize_q6_K;
        case DType::IQ4_XS:
            return kernels::dequantize_iq4_xs;
        default:
            return nullptr;
    }
}

}  // namespace sd::quant
