// The fast dequantizers, written once over a vector type S and compiled per instruction set:
// quant_avx2.cpp (8 floats a vector) and quant_avx512.cpp (16 floats) each define S and
// export dequantizer<S> as avx2_dequantizer / avx512_dequantizer (quant_blocks.h).
//
// Each block kernel decodes a block's quants into 32 signed bytes in element order with
// 256-bit AVX2 byte operations (the same on both sets), converts them to floats kWidth<S> at
// a time and applies the block's scales as the reference does: d * q, then - m or + m. That
// arithmetic is written with the GCC / Clang vector operators, which for __m256 / __m512 are
// what _mm256_mul_ps / _mm512_sub_ps etc. expand to; a float operand is broadcast to every
// lane. GCC contracts d * q - m and d * q + m into one FMA (its default for C++ is
// -ffp-contract=fast, and these files have -mfma). That changes no value: in every type with
// an m the product is exact in f32 (d is a half, 11 significant bits, or a half times a scale
// of at most 6 bits, and q has at most 5 bits), so one rounding or two give the same bits
// (a NaN stays a NaN, whatever its payload).
//
// Include only from those per-ISA files: the code here needs their compile flags, and
// everything is in an unnamed namespace so that each file keeps its own copy (one compiled
// with AVX-512 flags must never be linked in place of the AVX2 one).
//
// S provides V, a vector of kWidth<S> = 8 or 16 floats, H, one of kWidth<S> 16-bit values, and
//   V i8_to_f32(__m128i q): the low kWidth<S> signed bytes of q as floats;
//   H load_h(const uint16_t* p), load_h_partial(const uint16_t* p, int n): kWidth values, or
//       the first n < kWidth (the others 0), at any alignment;
//   V f16_to_f32(H), bf16_to_f32(H);
//   void store(float* p, V), store_partial(float* p, V, int n): all lanes or the first n.
#pragma once

#if !defined(__AVX2__) || !defined(__F16C__)
#error "dequantize_kernels.h is for the per-ISA files (quant_avx2.cpp, quant_avx512.cpp) only"
#endif

#include <immintrin.h>

#include <cstdint>

#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace sd::quant {
namespace {
namespace dequantize_kernels {

// Floats in a vector of S.
template <class S>
constexpr int kWidth = static_cast<int>(sizeof(typename S::V) / sizeof(float));

// ---- byte decoding: 256-bit integer operations, shared by both sets ----

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

// ---- scaling: signed bytes -> floats, kWidth<S> at a time ----

// How a block turns its quants q into values: d * q, d * q - m or d * q + m.
enum class Affine { None, Sub, Add };

// d * q, then - m or + m (exact products: an FMA here is harmless, see the top of the file).
template <Affine A, class V>
inline V scale(V q, float d, float m) {
    V y = d * q;
    if constexpr (A == Affine::Sub) y = y - m;
    if constexpr (A == Affine::Add) y = y + m;
    return y;
}

// 16 values from the 16 signed bytes of q: one vector of 16 floats, or two of 8. (Written
// out rather than as a loop over an array of vectors: with the array, GCC 12 vectorises the
// q2_K / q3_K / q6_K scale tables and then broadcasts each scale with two shuffles instead of
// one load: 6-30% slower on AVX2.)
template <class S, Affine A>
inline void store16(float* y, __m128i q, float d, float m) {
    static_assert(kWidth<S> == 8 || kWidth<S> == 16);
    S::store(y, scale<A>(S::i8_to_f32(q), d, m));
    if constexpr (kWidth<S> == 8) {
        S::store(y + 8, scale<A>(S::i8_to_f32(_mm_srli_si128(q, 8)), d, m));
    }
}

// 32 values: the first 16 quants with (d0, m0), the last 16 with (d1, m1); m is unused
// (pass 0) with Affine::None.
template <class S, Affine A>
inline void store32(float* y, __m256i q, float d0, float m0, float d1, float m1) {
    store16<S, A>(y, _mm256_castsi256_si128(q), d0, m0);
    store16<S, A>(y + 16, _mm256_extracti128_si256(q, 1), d1, m1);
}

template <class S, Affine A>
inline void store32(float* y, __m256i q, float d, float m) {
    store32<S, A>(y, q, d, m, d, m);
}

// ---- plain types ----

// Halves -> floats, kWidth<S> at a time; the tail through the partial load and store, so that
// every value goes through the same conversion. `Convert` is S::f16_to_f32 or S::bf16_to_f32.
template <class S, typename S::V (*Convert)(typename S::H)>
void dequantize_halves(const void* src, float* dst, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + kWidth<S> <= n; i += kWidth<S>) S::store(dst + i, Convert(S::load_h(s + i)));
    if (i < n) {
        const int rest = static_cast<int>(n - i);
        S::store_partial(dst + i, Convert(S::load_h_partial(s + i, rest)), rest);
    }
}

// ---- 32-value blocks ----

template <class S>
void dequantize_q8_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        store32<S, Affine::None>(dst, load32(reinterpret_cast<const uint8_t*>(b[i].qs)), d, 0.0f);
    }
}

template <class S>
void dequantize_q4_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        const __m256i q = _mm256_sub_epi8(split_nibbles(b[i].qs), _mm256_set1_epi8(8));
        store32<S, Affine::None>(dst, q, d, 0.0f);
    }
}

template <class S>
void dequantize_q4_1(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        const float m = f16_to_f32(b[i].m);
        store32<S, Affine::Add>(dst, split_nibbles(b[i].qs), d, m);
    }
}

template <class S>
void dequantize_q5_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ5_0*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        __m256i q = _mm256_or_si256(split_nibbles(b[i].qs), spread_bits(load_u32(b[i].qh), 0x10));
        q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
        store32<S, Affine::None>(dst, q, d, 0.0f);
    }
}

template <class S>
void dequantize_q5_1(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        const float m = f16_to_f32(b[i].m);
        const __m256i q =
            _mm256_or_si256(split_nibbles(b[i].qs), spread_bits(load_u32(b[i].qh), 0x10));
        store32<S, Affine::Add>(dst, q, d, m);
    }
}

template <class S>
void dequantize_iq4_nl(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockIQ4_NL*>(src);
    const __m256i table = iq4_table();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        store32<S, Affine::None>(dst, _mm256_shuffle_epi8(table, split_nibbles(b[i].qs)), d, 0.0f);
    }
}

// ---- 256-value super-blocks ----

template <class S>
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
                store32<S, Affine::Sub>(dst + 128 * h + 32 * k, bits_at(qs, 2 * k, 3), dl[s], ml[s],
                                        dl[s + 1], ml[s + 1]);
            }
        }
    }
}

template <class S>
void dequantize_q3_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ3_K*>(src);
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
                store32<S, Affine::None>(dst + 128 * h + 32 * k, q, dl[s], 0.0f, dl[s + 1], 0.0f);
            }
        }
    }
}

// q4_K and q5_K share everything but the fifth bit.
template <class S, bool kFifthBit, class Block>
void dequantize_k4(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const Block*>(src);
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
                store32<S, Affine::Sub>(dst + 32 * s, q, d * static_cast<float>(sc),
                                        dmin * static_cast<float>(m));
            }
        }
    }
}

template <class S>
void dequantize_q6_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ6_K*>(src);
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
                store32<S, Affine::None>(dst + 128 * h + 32 * k, q, dl[s], 0.0f, dl[s + 1], 0.0f);
            }
        }
    }
}

template <class S>
void dequantize_iq4_xs(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockIQ4_XS*>(src);
    const __m256i table = iq4_table();
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        for (int s = 0; s < 8; ++s) {
            const float dl = d * static_cast<float>(scale_iq4_xs(s, b[i]) - 32);
            const __m256i q = _mm256_shuffle_epi8(table, split_nibbles(b[i].qs + 16 * s));
            store32<S, Affine::None>(dst + 32 * s, q, dl, 0.0f);
        }
    }
}

// The kernel for `type` with vectors S, or nullptr for a type without a fast path.
template <class S>
DequantizeFn dequantizer(DType type) {
    switch (type) {
        case DType::F16:
            return dequantize_halves<S, S::f16_to_f32>;
        case DType::BF16:
            return dequantize_halves<S, S::bf16_to_f32>;
        case DType::Q4_0:
            return dequantize_q4_0<S>;
        case DType::Q4_1:
            return dequantize_q4_1<S>;
        case DType::Q5_0:
            return dequantize_q5_0<S>;
        case DType::Q5_1:
            return dequantize_q5_1<S>;
        case DType::Q8_0:
            return dequantize_q8_0<S>;
        case DType::IQ4_NL:
            return dequantize_iq4_nl<S>;
        case DType::Q2_K:
            return dequantize_q2_K<S>;
        case DType::Q3_K:
            return dequantize_q3_K<S>;
        case DType::Q4_K:
            return dequantize_k4<S, false, BlockQ4_K>;
        case DType::Q5_K:
            return dequantize_k4<S, true, BlockQ5_K>;
        case DType::Q6_K:
            return dequantize_q6_K<S>;
        case DType::IQ4_XS:
            return dequantize_iq4_xs<S>;
        default:
            return nullptr;
    }
}

}  // namespace dequantize_kernels
}  // namespace
}  // namespace sd::quant
