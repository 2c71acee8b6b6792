// Reference conversions of the 32-value block types: q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl.
//
// Quantization reproduces the reference engine's blocks byte for byte (iq4_nl: the same
// scale search). The arithmetic is written out step by step on purpose: each product
// and sum is rounded to f32 in the same order as the reference, so do not "simplify".
#include <cmath>
#include <cstring>

#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace sd::quant {
namespace {

// The reference converts with a C cast (truncation toward zero), which is undefined for
// NaN and out-of-range values; here those clamp to [lo, hi] (NaN to lo) instead.
inline int trunc_clamped(float v, int lo, int hi) {
    if (!(v > static_cast<float>(lo))) return lo;
    if (v >= static_cast<float>(hi)) return hi;
    return static_cast<int>(v);
}

// roundf (half away from zero), clamped the same way.
inline int round_clamped(float v, int lo, int hi) {
    if (!(v > static_cast<float>(lo))) return lo;
    if (v >= static_cast<float>(hi)) return hi;
    return static_cast<int>(std::round(v));
}

// The value of largest magnitude (the first one when tied), sign kept.
inline float signed_absmax(const float* x, int n) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

inline void min_max(const float* x, int n, float* min, float* max) {
    *min = 3.402823466e+38f;
    *max = -3.402823466e+38f;
    for (int j = 0; j < n; ++j) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

// Packs 32 5-bit quants: low nibbles as q4_0, bit 4 of element j into bit j of qh.
inline void pack_q5(const uint8_t* q, uint8_t* qs, uint8_t* qh_bytes) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
        qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
        qh |= static_cast<uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
    }
    std::memcpy(qh_bytes, &qh, 4);
}

// The 5-bit quant of element j (0..31) of a q5_0 / q5_1 block.
inline int unpack_q5(const uint8_t* qs, uint32_t qh, int j) {
    int low = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
    return low | static_cast<int>(((qh >> j) & 1) << 4);
}

// Index of the iq4_nl level nearest to x (the lower one on a tie): levels are sorted,
// so compare against the midpoints.
inline int best_iq4_index(float x) {
    const int8_t* v = kIq4nlValues;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < v[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

}  // namespace

// ---- q4_0 ----

void dequantize_q4_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        for (int j = 0; j < kQK / 2; ++j) {
            dst[j] = static_cast<float>((b[i].qs[j] & 0x0F) - 8) * d;
            dst[j + 16] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void quantize_q4_0(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ4_0*>(dst);
    for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
        // The scale maps the extreme value to -8, the one level without a positive twin.
        const float d = signed_absmax(src, kQK) / -8.f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        for (int j = 0; j < kQK / 2; ++j) {
            int q0 = trunc_clamped(src[j] * id + 8.5f, 0, 15);
            int q1 = trunc_clamped(src[j + 16] * id + 8.5f, 0, 15);
            b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

// ---- q4_1 ----

void dequantize_q4_1(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        const float m = f16_to_f32(b[i].m);
        for (int j = 0; j < kQK / 2; ++j) {
            dst[j] = static_cast<float>(b[i].qs[j] & 0x0F) * d + m;
            dst[j + 16] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
        }
    }
}

void quantize_q4_1(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ4_1*>(dst);
    for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
        float min, max;
        min_max(src, kQK, &min, &max);
        const float d = (max - min) / 15.f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        b[i].m = f32_to_f16(min);
        for (int j = 0; j < kQK / 2; ++j) {
            int q0 = trunc_clamped((src[j] - min) * id + 0.5f, 0, 15);
            int q1 = trunc_clamped((src[j + 16] - min) * id + 0.5f, 0, 15);
            b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

// ---- q5_0 ----

void dequantize_q5_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ5_0*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        const uint32_t qh = load_u32(b[i].qh);
        for (int j = 0; j < kQK; ++j) {
            dst[j] = static_cast<float>(unpack_q5(b[i].qs, qh, j) - 16) * d;
        }
    }
}

void quantize_q5_0(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ5_0*>(dst);
    uint8_t q[kQK];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
        const float d = signed_absmax(src, kQK) / -16.f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        for (int j = 0; j < kQK; ++j) {
            q[j] = static_cast<uint8_t>(trunc_clamped(src[j] * id + 16.5f, 0, 31));
        }
        pack_q5(q, b[i].qs, b[i].qh);
    }
}

// ---- q5_1 ----

void dequantize_q5_1(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        const float m = f16_to_f32(b[i].m);
        const uint32_t qh = load_u32(b[i].qh);
        for (int j = 0; j < kQK; ++j) {
            dst[j] = static_cast<float>(unpack_q5(b[i].qs, qh, j)) * d + m;
        }
    }
}

void quantize_q5_1(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ5_1*>(dst);
    uint8_t q[kQK];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
        float min, max;
        min_max(src, kQK, &min, &max);
        const float d = (max - min) / 31.f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        b[i].m = f32_to_f16(min);
        for (int j = 0; j < kQK; ++j) {
            q[j] = static_cast<uint8_t>(trunc_clamped((src[j] - min) * id + 0.5f, 0, 31));
        }
        pack_q5(q, b[i].qs, b[i].qh);
    }
}

// ---- q8_0 ----

void dequantize_q8_0(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
    }
}

void quantize_q8_0(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
        float amax = 0;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
        const float d = amax / 127.f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        for (int j = 0; j < kQK; ++j) {
            b[i].qs[j] = static_cast<int8_t>(round_clamped(src[j] * id, -128, 127));
        }
    }
}

// ---- iq4_nl ----

void dequantize_iq4_nl(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockIQ4_NL*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
        const float d = f16_to_f32(b[i].d);
        for (int j = 0; j < kQK / 2; ++j) {
            dst[j] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] & 0x0F]);
            dst[j + 16] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] >> 4]);
        }
    }
}

// Scale of one block of iq4 levels, as the reference searches it: start from the scale
// that maps the extreme value to the extreme level, then try 2*ntry+1 nearby scales and
// keep the least-squares fit (weights x^2) with the largest sum(w*q*x)^2 / sum(w*q*q).
float iq4_block_scale(const float* x, const float* w, int n, int ntry, uint8_t* L) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    if (amax < 1e-15f) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0;
    }
    const float v0 = kIq4nlValues[0];
    float d = ntry > 0 ? -max / v0 : max / v0;
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < n; ++j) {
        int l = best_iq4_index(id * x[j]);
        L[j] = static_cast<uint8_t>(l);
        float q = kIq4nlValues[l];
        sumqx += w[j] * q * x[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
        id = (static_cast<float>(itry) + v0) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < n; ++j) {
            float q = kIq4nlValues[best_iq4_index(id * x[j])];
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// Levels of n values for the final scale d (0 when d is 0).
void iq4_assign(const float* x, int n, float d, uint8_t* L) {
    const float id = d != 0 ? 1 / d : 0.f;
    for (int j = 0; j < n; ++j) L[j] = static_cast<uint8_t>(best_iq4_index(id * x[j]));
}

void quantize_iq4_nl(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockIQ4_NL*>(dst);
    float w[kQK];
    uint8_t L[kQK];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
        for (int j = 0; j < kQK; ++j) w[j] = src[j] * src[j];
        float d = iq4_block_scale(src, w, kQK, 7, L);
        b[i].d = f32_to_f16(d);
        // Re-pick the levels for the scale that won the search (the reference uses the
        // f32 scale here, not its f16 rounding).
        iq4_assign(src, kQK, d, L);
        for (int j = 0; j < kQK / 2; ++j) {
            b[i].qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
        }
    }
}

}  // namespace sd::quant
