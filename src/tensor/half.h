// IEEE half (f16) and bfloat16 scalar conversions, bit-exact with the reference engine:
// round to nearest even, NaN kept NaN. Kernels use the F16C / AVX-512 instructions,
// which round the same way.
#pragma once

#include <cstdint>
#include <cstring>

namespace sd {

inline uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float f32_from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline float f16_to_f32(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000 | (mant << 13));  // inf / NaN
    if (exp == 0) {
        if (mant == 0) return f32_from_bits(sign);
        // Subnormal half: value = mant * 2^-24, exact in f32.
        float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t abs = u & 0x7fffffff;
    if (abs > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
    if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf
    if (abs < 0x38800000) {
        // Result is subnormal or zero: scale so the half ulp (2^-24) is 1, round to even.
        float a = f32_from_bits(abs);
        // 2^24 * a is exact in f32 here; nearbyint rounds to even in the default mode.
        float scaled = a * 16777216.0f;
        uint32_t q = static_cast<uint32_t>(scaled);
        float frac = scaled - static_cast<float>(q);
        if (frac > 0.5f || (frac == 0.5f && (q & 1))) ++q;
        return static_cast<uint16_t>(sign | q);
    }
    // Normal: rebias the exponent and round the 13 dropped bits to nearest even.
    uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
    return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

inline float bf16_to_f32(uint16_t h) {
    return f32_from_bits(static_cast<uint32_t>(h) << 16);
}

inline uint16_t f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 64);  // quiet NaN
    return static_cast<uint16_t>((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

}  // namespace sd
