// GGUF block layouts of the quantized dtypes, byte for byte as they sit in a GGUF file
// (little-endian, no padding), and the per-type row kernels that quant.cpp dispatches to.
//
// Notation: `d`, `dmin`, `m` are IEEE halves (f16 bits). A "super-block" is the 256 values
// of a k-quant or iq4_xs block; it is split into sub-blocks of 16 or 32 values that each
// carry their own small integer scale. Element e means the e-th value of the block.
//
// Internal header: include only from src/tensor/quant*.cpp, the op kernels and tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tensor/dtype.h"

namespace sd::quant {

// Blocks are packed (alignment 1): a row may start at any byte of a mapped file, so every
// field access must be an unaligned one.
#define SD_BLOCK __attribute__((packed))

constexpr int kQK = 32;     // values per block of the legacy types and iq4_nl
constexpr int kQK_K = 256;  // values per super-block of the k-quants and iq4_xs

// q4_0 (18 bytes): value = d * (q - 8), q in 0..15.
// qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
struct SD_BLOCK BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kQK / 2];
};

// q4_1 (20 bytes): value = d * q + m, q in 0..15; nibbles as q4_0.
struct SD_BLOCK BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK / 2];
};

// q5_0 (22 bytes): value = d * (q - 16), q in 0..31. The low 4 bits are nibbles as in
// q4_0; bit 4 of element j is bit j of the little-endian 32-bit word qh.
struct SD_BLOCK BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// q5_1 (24 bytes): value = d * q + m, q in 0..31; bits as q5_0.
struct SD_BLOCK BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// q8_0 (34 bytes): value = d * qs[j], qs signed.
struct SD_BLOCK BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQK];
};

// q2_K (84 bytes): 16 sub-blocks of 16. scales[s] = scale (low nibble) | min (high nibble);
// value = d * scale * q - dmin * min, q in 0..3. Element e = 128 * h + 32 * k + l
// (h in 0..1, k in 0..3, l in 0..31) is bits 2k..2k+1 of qs[32 * h + l]; its sub-block is e / 16.
struct SD_BLOCK BlockQ2_K {
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    uint16_t d;
    uint16_t dmin;
};

// q3_K (110 bytes): 16 sub-blocks of 16 with signed 6-bit scales (stored + 32);
// value = d * (scale - 32) * (q - 4), q in 0..7. The low 2 bits of q are placed as in q2_K;
// bit 2 of element e is bit e / 32 of hmask[e % 32]. Scale s: low 4 bits are the low
// (s < 8) or high (s >= 8) nibble of scales[s % 8]; its top 2 bits are bits 2*(s/4)..+1
// of scales[8 + s % 4].
struct SD_BLOCK BlockQ3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};

// q4_K (144 bytes): 8 sub-blocks of 32 with 6-bit scale and min packed in scales[12]
// (see scale_min_k4); value = d * scale * q - dmin * min, q in 0..15. Element
// e = 64 * c + 32 * h + l is the low (h = 0) or high (h = 1) nibble of qs[32 * c + l].
struct SD_BLOCK BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[kQK_K / 2];
};

// q5_K (176 bytes): as q4_K with q in 0..31; bit 4 of element e is bit e / 32 of qh[e % 32].
struct SD_BLOCK BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};

// q6_K (210 bytes): 16 sub-blocks of 16 with signed 8-bit scales;
// value = d * scales[e / 16] * (q - 32), q in 0..63. Element e = 128 * h + 32 * k + l:
// low 4 bits are the low (k < 2) or high (k >= 2) nibble of ql[64 * h + 32 * (k % 2) + l];
// the top 2 bits are bits 2k..2k+1 of qh[32 * h + l].
struct SD_BLOCK BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};

// iq4_nl (18 bytes): value = d * kIq4nlValues[q], q in 0..15; nibbles as q4_0.
struct SD_BLOCK BlockIQ4_NL {
    uint16_t d;
    uint8_t qs[kQK / 2];
};

// iq4_xs (136 bytes): 8 sub-blocks of 32 with 6-bit scales (stored + 32);
// value = d * (scale - 32) * kIq4nlValues[q]. Scale s: low 4 bits are nibble s % 2 of
// scales_l[s / 2], top 2 bits are bits 2s..2s+1 of scales_h. Sub-block s holds its 32
// quants in qs[16 * s .. 16 * s + 15], nibbles as q4_0.
struct SD_BLOCK BlockIQ4_XS {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);
static_assert(alignof(BlockQ3_K) == 1 && alignof(BlockQ6_K) == 1 && alignof(BlockIQ4_XS) == 1);

// The 16 non-uniform levels of iq4_nl / iq4_xs.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Scale and min of sub-block j (0..7) of a q4_K / q5_K block: 6 bits each. Sub-blocks 0..3
// keep theirs in the low 6 bits of scales[j] and scales[j + 4]; 4..7 keep the low 4 bits in
// the nibbles of scales[j + 4] and the top 2 bits in bits 6..7 of scales[j - 4] / scales[j].
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
    if (j < 4) {
        *scale = q[j] & 63;
        *min = q[j + 4] & 63;
    } else {
        *scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Scale s (0..15) of a q3_K block, still offset by 32 (0..63).
inline int scale_q3_k(int s, const uint8_t* scales) {
    int low = s < 8 ? scales[s] & 0xF : scales[s - 8] >> 4;
    int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
    return low | (high << 4);
}

// Scale s (0..7) of an iq4_xs block, still offset by 32 (0..63).
inline int scale_iq4_xs(int s, const BlockIQ4_XS& b) {
    int low = (b.scales_l[s / 2] >> (4 * (s % 2))) & 0xF;
    int high = (b.scales_h >> (2 * s)) & 3;
    return low | (high << 4);
}

// Round to nearest, ties to even, as the reference does it: adding 1.5 * 2^23 leaves the
// integer in the low mantissa bits. Exact for |x| <= 2^22; beyond that (or NaN) the result
// is some int, never undefined behaviour, and callers clamp it.
inline int nearest_int(float x) {
    float v = x + 12582912.f;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return static_cast<int>(bits & 0x007fffff) - 0x00400000;
}

inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Row kernels over `nblocks` whole blocks (for plain types a block is one value).
// Reference (plain C++) versions; quant_legacy.cpp and quant_k.cpp.
using DequantizeFn = void (*)(const void* src, float* dst, int64_t nblocks);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t nblocks);

#define SD_QUANT_KERNELS(name)                                            \
    void dequantize_##name(const void* src, float* dst, int64_t nblocks); \
    void quantize_##name(const float* src, void* dst, int64_t nblocks);
SD_QUANT_KERNELS(q4_0)
SD_QUANT_KERNELS(q4_1)
SD_QUANT_KERNELS(q5_0)
SD_QUANT_KERNELS(q5_1)
SD_QUANT_KERNELS(q8_0)
SD_QUANT_KERNELS(iq4_nl)
SD_QUANT_KERNELS(q2_K)
SD_QUANT_KERNELS(q3_K)
SD_QUANT_KERNELS(q4_K)
SD_QUANT_KERNELS(q5_K)
SD_QUANT_KERNELS(q6_K)
SD_QUANT_KERNELS(iq4_xs)
#undef SD_QUANT_KERNELS

// The iq4 scale search shared by iq4_nl and iq4_xs (quant_legacy.cpp): the scale of one
// block of n values with weights w, trying 2 * ntry + 1 candidates; L gets levels 0..15.
float iq4_block_scale(const float* x, const float* w, int n, int ntry, uint8_t* L);
// Levels 0..15 of n values for scale d.
void iq4_assign(const float* x, int n, float d, uint8_t* L);

// Fast dequantization for one instruction set: the kernel for `type`, or nullptr when that
// set has none for it. Each must equal the reference bit for bit. Defined only in builds
// with SD_X86_KERNELS (quant_avx2.cpp, quant_avx512.cpp: the kernels of dequantize_kernels.h
// compiled for each set).
DequantizeFn avx2_dequantizer(DType type);
DequantizeFn avx512_dequantizer(DType type);

}  // namespace sd::quant
