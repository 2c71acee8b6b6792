// Reference conversions of the 256-value super-block types: q2_K, q3_K, q4_K, q5_K, q6_K
// and iq4_xs.
//
// Quantization uses the reference engine's scale searches (make_qx_quants for q6_K,
// make_q3_quants for q3_K, make_qkx2_quants for q2_K / q4_K / q5_K, the iq4 search for
// iq4_xs) with the same constants, then requantizes every value against the f16-rounded
// scales that actually land in the block. Expressions keep the reference's order of
// f32 operations so the blocks come out the same.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace sd::quant {
namespace {

constexpr float kGroupMaxEps = 1e-15f;  // below this a group counts as all zero

inline int clamp_int(int v, int lo, int hi) {
    return std::max(lo, std::min(hi, v));
}

// The value of largest magnitude (the first one when tied), sign kept; *amax gets |max|.
inline float signed_absmax(const float* x, int n, float* amax) {
    float max = 0;
    *amax = 0;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > *amax) {
            *amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    return max;
}

// Symmetric quants l in [-nmax, nmax) for n values, weights x^2: the scale that maps the
// extreme value to -nmax and 18 nearby ones are tried, keeping the least-squares best.
// L gets l + nmax; returns the scale.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
    float amax;
    const float max = signed_absmax(x, n, &amax);
    if (amax < kGroupMaxEps) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = x[i] * x[i];
        const float fl = static_cast<float>(l);
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const float fl =
                static_cast<float>(clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * fl;
            suml2 += w * fl * fl;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                L[i] = static_cast<int8_t>(nmax +
                                           clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Symmetric quants for q3_K: start from the extreme-value scale, then up to 5 passes that
// move single quants while that improves the weighted (x^2) least-squares fit.
// L gets l + nmax; returns the scale.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
    float amax;
    const float max = signed_absmax(x, n, &amax);
    if (amax < kGroupMaxEps) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    const float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            const float li = static_cast<float>(L[i]);
            float slx = sumlx - w * x[i] * li;
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w * li * li;
            int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (new_l == L[i]) continue;
            const float nl = static_cast<float>(new_l);
            slx += w * x[i] * nl;
            sl2 += w * nl * nl;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = static_cast<int8_t>(new_l);
                sumlx = slx;
                suml2 = sl2;
                ++n_changed;
            }
        }
        if (n_changed == 0) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric quants l in [0, nmax] with value = scale * l - the_min: the min-max fit and
// nstep + 1 stretched scales (rmin + rdelta * is) are tried, each refit by weighted least
// squares for scale and min; the smallest weighted error (|diff| when use_mad, else
// diff^2) wins. Returns the scale; *the_min >= 0.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::memset(L, 0, static_cast<size_t>(n));
        *the_min = -min;
        return 0.f;
    }
    auto error_of = [&](float scale, float mn, const uint8_t* q) {
        float err = 0;
        for (int i = 0; i < n; ++i) {
            float diff = scale * static_cast<float>(q[i]) + mn - x[i];
            diff = use_mad ? std::fabs(diff) : diff * diff;
            err += weights[i] * diff;
        }
        return err;
    };
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
    }
    float best_error = error_of(scale, min, L);
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            const float fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        const float cur_error = error_of(this_scale, this_min, Laux);
        if (cur_error < best_error) {
            std::memcpy(L, Laux, static_cast<size_t>(n));
            best_error = cur_error;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

// Packs 256 2-bit values: element 128 * h + 32 * k + l into bits 2k of qs[32 * h + l].
void pack_2bit(const uint8_t* L, uint8_t* qs) {
    for (int h = 0; h < 2; ++h) {
        const uint8_t* Lh = L + 128 * h;
        for (int l = 0; l < 32; ++l) {
            qs[32 * h + l] = static_cast<uint8_t>(Lh[l] | (Lh[l + 32] << 2) | (Lh[l + 64] << 4) |
                                                  (Lh[l + 96] << 6));
        }
    }
}

// Packs the 6-bit scales and mins of a q4_K / q5_K block (inverse of scale_min_k4).
void pack_scale_min_k4(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls[j] >> 4) << 6));
            scales[j] = static_cast<uint8_t>(scales[j] | ((lm[j] >> 4) << 6));
        }
    }
}

// Shared by q4_K and q5_K: fits the 8 sub-blocks of 32, stores d, dmin and the packed
// 6-bit scales/mins, and leaves the final quants (0..nmax) of the 256 values in L.
// Returns d and dmin (f16 bits).
struct K4Scales {
    uint16_t d, dmin;
};

K4Scales quantize_k4_scales(const float* x, int nmax, float rmin, float rdelta, int nstep,
                            uint8_t* packed, uint8_t* L) {
    float scales[8], mins[8], weights[32];
    uint8_t Laux[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xb = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xb[l] * xb[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xb[l]);
        scales[j] = make_qkx2_quants(32, nmax, xb, weights, L + 32 * j, &mins[j], Laux, rmin,
                                     rdelta, nstep, false);
        max_scale = std::max(max_scale, scales[j]);
        max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; ++j) {
        ls[j] = static_cast<uint8_t>(clamp_int(nearest_int(inv_scale * scales[j]), 0, 63));
        lm[j] = static_cast<uint8_t>(clamp_int(nearest_int(inv_min * mins[j]), 0, 63));
    }
    pack_scale_min_k4(ls, lm, packed);
    const K4Scales out = {f32_to_f16(max_scale / 63.f), f32_to_f16(max_min / 63.f)};
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, packed, &sc, &m);
        const float d = f16_to_f32(out.d) * static_cast<float>(sc);
        if (d == 0) continue;
        const float dm = f16_to_f32(out.dmin) * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
            L[32 * j + l] =
                static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
        }
    }
    return out;
}

}  // namespace

// ---- q2_K ----

void dequantize_q2_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ2_K*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        const float dmin = f16_to_f32(b[i].dmin);
        // Element 128 * h + 32 * k + l: bits 2k of qs[32 * h + l], sub-block e / 16.
        for (int s = 0; s < 16; ++s) {
            const int h = s / 8, k = (s / 2) % 4, l0 = 16 * (s % 2);
            const float dl = d * static_cast<float>(b[i].scales[s] & 0xF);
            const float ml = dmin * static_cast<float>(b[i].scales[s] >> 4);
            const uint8_t* qs = b[i].qs + 32 * h + l0;
            float* y = dst + 16 * s;
            for (int l = 0; l < 16; ++l) {
                y[l] = dl * static_cast<float>((qs[l] >> (2 * k)) & 3) - ml;
            }
        }
    }
}

void quantize_q2_K(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ2_K*>(dst);
    uint8_t L[kQK_K], Laux[16];
    float weights[16], mins[16], scales[16];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(src[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, src + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                         -0.5f, 0.1f, 15, true);
            max_scale = std::max(max_scale, scales[j]);
            max_min = std::max(max_min, mins[j]);
        }
        // 4-bit sub-block scales and mins against f16 super-block factors.
        const float q4scale = 15.f;
        std::memset(b[i].scales, 0, sizeof(b[i].scales));
        b[i].d = f32_to_f16(0.f);
        b[i].dmin = f32_to_f16(0.f);
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < 16; ++j) {
                b[i].scales[j] =
                    static_cast<uint8_t>(clamp_int(nearest_int(iscale * scales[j]), 0, 15));
            }
            b[i].d = f32_to_f16(max_scale / q4scale);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < 16; ++j) {
                int l = clamp_int(nearest_int(iscale * mins[j]), 0, 15);
                b[i].scales[j] = static_cast<uint8_t>(b[i].scales[j] | (l << 4));
            }
            b[i].dmin = f32_to_f16(max_min / q4scale);
        }
        for (int j = 0; j < 16; ++j) {
            const float d = f16_to_f32(b[i].d) * static_cast<float>(b[i].scales[j] & 0xF);
            if (d == 0) continue;
            const float dm = f16_to_f32(b[i].dmin) * static_cast<float>(b[i].scales[j] >> 4);
            for (int l = 0; l < 16; ++l) {
                L[16 * j + l] =
                    static_cast<uint8_t>(clamp_int(nearest_int((src[16 * j + l] + dm) / d), 0, 3));
            }
        }
        pack_2bit(L, b[i].qs);
    }
}

// ---- q3_K ----

void dequantize_q3_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ3_K*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d_all = f16_to_f32(b[i].d);
        // Element 128 * h + 32 * k + l: low bits as q2_K, high bit 4h + k of hmask[l].
        for (int s = 0; s < 16; ++s) {
            const int h = s / 8, k = (s / 2) % 4, l0 = 16 * (s % 2);
            const float dl = d_all * static_cast<float>(scale_q3_k(s, b[i].scales) - 32);
            const uint8_t* qs = b[i].qs + 32 * h + l0;
            const uint8_t* hm = b[i].hmask + l0;
            float* y = dst + 16 * s;
            for (int l = 0; l < 16; ++l) {
                const int low = (qs[l] >> (2 * k)) & 3;
                // A clear high bit means the value is 4 lower.
                const int high = (hm[l] >> (4 * h + k)) & 1;
                y[l] = dl * static_cast<float>(low - (high ? 0 : 4));
            }
        }
    }
}

void quantize_q3_K(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ3_K*>(dst);
    int8_t L[kQK_K];
    float scales[16];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = make_q3_quants(16, 4, src + 16 * j, L + 16 * j);
            if (std::fabs(scales[j]) > amax) {
                amax = std::fabs(scales[j]);
                max_scale = scales[j];
            }
        }
        // 6-bit signed sub-block scales (stored + 32) against an f16 super-block factor.
        std::memset(b[i].scales, 0, sizeof(b[i].scales));
        b[i].d = f32_to_f16(0.f);
        if (max_scale != 0) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; ++j) {
                const int l = clamp_int(nearest_int(iscale * scales[j]), -32, 31) + 32;
                if (j < 8) {
                    b[i].scales[j] = static_cast<uint8_t>(l & 0xF);
                } else {
                    b[i].scales[j - 8] =
                        static_cast<uint8_t>(b[i].scales[j - 8] | ((l & 0xF) << 4));
                }
                b[i].scales[j % 4 + 8] =
                    static_cast<uint8_t>(b[i].scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
            }
            b[i].d = f32_to_f16(1 / iscale);
        }
        for (int j = 0; j < 16; ++j) {
            const float d =
                f16_to_f32(b[i].d) * static_cast<float>(scale_q3_k(j, b[i].scales) - 32);
            if (d == 0) continue;
            for (int l = 0; l < 16; ++l) {
                L[16 * j + l] =
                    static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + l] / d), -4, 3) + 4);
            }
        }
        // Bit 2 of each quant goes to hmask; the low 2 bits are packed as q2_K.
        std::memset(b[i].hmask, 0, sizeof(b[i].hmask));
        uint8_t low[kQK_K];
        for (int e = 0; e < kQK_K; ++e) {
            if (L[e] > 3)
                b[i].hmask[e % 32] = static_cast<uint8_t>(b[i].hmask[e % 32] | (1 << (e / 32)));
            low[e] = static_cast<uint8_t>(L[e] & 3);
        }
        pack_2bit(low, b[i].qs);
    }
}

// ---- q4_K ----

void dequantize_q4_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ4_K*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        const float dmin = f16_to_f32(b[i].dmin);
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            scale_min_k4(s, b[i].scales, &sc, &m);
            const float dl = d * static_cast<float>(sc);
            const float ml = dmin * static_cast<float>(m);
            const uint8_t* q = b[i].qs + 32 * (s / 2);
            const int shift = 4 * (s % 2);
            for (int l = 0; l < 32; ++l) {
                dst[32 * s + l] = dl * static_cast<float>((q[l] >> shift) & 0xF) - ml;
            }
        }
    }
}

void quantize_q4_K(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ4_K*>(dst);
    uint8_t L[kQK_K];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
        const K4Scales k = quantize_k4_scales(src, 15, -1.f, 0.1f, 20, b[i].scales, L);
        b[i].d = k.d;
        b[i].dmin = k.dmin;
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                b[i].qs[32 * c + l] =
                    static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
            }
        }
    }
}

// ---- q5_K ----

void dequantize_q5_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ5_K*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        const float dmin = f16_to_f32(b[i].dmin);
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            scale_min_k4(s, b[i].scales, &sc, &m);
            const float dl = d * static_cast<float>(sc);
            const float ml = dmin * static_cast<float>(m);
            const uint8_t* q = b[i].qs + 32 * (s / 2);
            const int shift = 4 * (s % 2);
            for (int l = 0; l < 32; ++l) {
                const int v = ((q[l] >> shift) & 0xF) | (((b[i].qh[l] >> s) & 1) << 4);
                dst[32 * s + l] = dl * static_cast<float>(v) - ml;
            }
        }
    }
}

void quantize_q5_K(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ5_K*>(dst);
    uint8_t L[kQK_K];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
        const K4Scales k = quantize_k4_scales(src, 31, -0.5f, 0.1f, 15, b[i].scales, L);
        b[i].d = k.d;
        b[i].dmin = k.dmin;
        std::memset(b[i].qh, 0, sizeof(b[i].qh));
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                const int l1 = L[64 * c + l], l2 = L[64 * c + 32 + l];
                b[i].qs[32 * c + l] = static_cast<uint8_t>((l1 & 0xF) | ((l2 & 0xF) << 4));
                b[i].qh[l] = static_cast<uint8_t>(b[i].qh[l] | ((l1 >> 4) << (2 * c)) |
                                                  ((l2 >> 4) << (2 * c + 1)));
            }
        }
    }
}

// ---- q6_K ----

void dequantize_q6_K(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockQ6_K*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        // Element 128 * h + 32 * k + l: low nibble k / 2 of ql[64 * h + 32 * (k % 2) + l],
        // high bits 2k of qh[32 * h + l], sub-block e / 16.
        for (int s = 0; s < 16; ++s) {
            const int h = s / 8, k = (s / 2) % 4, l0 = 16 * (s % 2);
            // (d * scale) * q: the reference rounds the product of the scales first.
            const float dl = d * static_cast<float>(b[i].scales[s]);
            const uint8_t* ql = b[i].ql + 64 * h + 32 * (k % 2) + l0;
            const uint8_t* qh = b[i].qh + 32 * h + l0;
            float* y = dst + 16 * s;
            for (int l = 0; l < 16; ++l) {
                const int low = (ql[l] >> (4 * (k / 2))) & 0xF;
                const int high = (qh[l] >> (2 * k)) & 3;
                y[l] = dl * static_cast<float>((low | (high << 4)) - 32);
            }
        }
    }
}

void quantize_q6_K(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockQ6_K*>(dst);
    int8_t L[kQK_K];
    float scales[16];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = make_qx_quants(16, 32, src + 16 * j, L + 16 * j);
            if (std::fabs(scales[j]) > max_abs_scale) {
                max_abs_scale = std::fabs(scales[j]);
                max_scale = scales[j];
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&b[i], 0, sizeof(BlockQ6_K));
            continue;
        }
        // 8-bit signed sub-block scales against an f16 super-block factor.
        const float iscale = -128.f / max_scale;
        b[i].d = f32_to_f16(1 / iscale);
        for (int j = 0; j < 16; ++j) {
            b[i].scales[j] =
                static_cast<int8_t>(clamp_int(nearest_int(iscale * scales[j]), -128, 127));
        }
        for (int j = 0; j < 16; ++j) {
            const float d = f16_to_f32(b[i].d) * static_cast<float>(b[i].scales[j]);
            if (d == 0) continue;
            for (int l = 0; l < 16; ++l) {
                L[16 * j + l] =
                    static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + l] / d), -32, 31) + 32);
            }
        }
        for (int h = 0; h < 2; ++h) {
            const int8_t* Lh = L + 128 * h;
            uint8_t* ql = b[i].ql + 64 * h;
            uint8_t* qh = b[i].qh + 32 * h;
            for (int l = 0; l < 32; ++l) {
                ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
                ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
                qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                             ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
            }
        }
    }
}

// ---- iq4_xs ----

void dequantize_iq4_xs(const void* src, float* dst, int64_t nblocks) {
    const auto* b = static_cast<const BlockIQ4_XS*>(src);
    for (int64_t i = 0; i < nblocks; ++i, dst += kQK_K) {
        const float d = f16_to_f32(b[i].d);
        for (int s = 0; s < 8; ++s) {
            const float dl = d * static_cast<float>(scale_iq4_xs(s, b[i]) - 32);
            const uint8_t* qs = b[i].qs + 16 * s;
            float* y = dst + 32 * s;
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
                y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
            }
        }
    }
}

void quantize_iq4_xs(const float* src, void* dst, int64_t nblocks) {
    auto* b = static_cast<BlockIQ4_XS*>(dst);
    float w[32], scales[8];
    uint8_t L[kQK_K];
    for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
        float max_scale = 0, amax_scale = 0;
        for (int s = 0; s < 8; ++s) {
            const float* xb = src + 32 * s;
            for (int j = 0; j < 32; ++j) w[j] = xb[j] * xb[j];
            scales[s] = iq4_block_scale(xb, w, 32, 7, L + 32 * s);
            if (std::fabs(scales[s]) > amax_scale) {
                amax_scale = std::fabs(scales[s]);
                max_scale = scales[s];
            }
        }
        // 6-bit signed sub-block scales (stored + 32); the extreme one maps to -32.
        const float d = -max_scale / 32;
        const float id = d != 0 ? 1 / d : 0.f;
        b[i].d = f32_to_f16(d);
        b[i].scales_h = 0;
        std::memset(b[i].scales_l, 0, sizeof(b[i].scales_l));
        for (int s = 0; s < 8; ++s) {
            const int l = clamp_int(nearest_int(id * scales[s]), -32, 31);
            iq4_assign(src + 32 * s, 32, d * static_cast<float>(l), L + 32 * s);
            const int stored = l + 32;
            b[i].scales_l[s / 2] =
                static_cast<uint8_t>(b[i].scales_l[s / 2] | ((stored & 0xF) << (4 * (s % 2))));
            b[i].scales_h = static_cast<uint16_t>(b[i].scales_h | ((stored >> 4) << (2 * s)));
        }
        for (int s = 0; s < 8; ++s) {
            for (int j = 0; j < 16; ++j) {
                b[i].qs[16 * s + j] =
                    static_cast<uint8_t>(L[32 * s + j] | (L[32 * s + 16 + j] << 4));
            }
        }
    }
}

}  // namespace sd::quant
