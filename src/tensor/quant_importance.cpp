#include "tensor/quant_importance.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/half.h"
#include "tensor/quant.h"
#include "tensor/quant_blocks.h"

namespace sd {
namespace {

using namespace quant;

constexpr float kGroupMaxEps = 1e-15f;

inline int clampi(int v, int lo, int hi) {
    return std::max(lo, std::min(hi, v));
}

// Symmetric quants l in [-nmax, nmax) minimising sum w (x - s l)^2 over 19 candidate scales;
// L gets l + nmax. Returns the scale.
float make_qx_quants_w(int n, int nmax, const float* x, int8_t* L, const float* w) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    auto fit = [&](float iscale, float* sumlx, float* suml2) {
        *sumlx = *suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            *sumlx += w[i] * x[i] * static_cast<float>(l);
            *suml2 += w[i] * static_cast<float>(l * l);
        }
    };
    auto assign = [&](float iscale) {
        for (int i = 0; i < n; ++i)
            L[i] = static_cast<int8_t>(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    };
    float iscale = -static_cast<float>(nmax) / max;
    float sumlx, suml2;
    fit(iscale, &sumlx, &suml2);
    assign(iscale);
    float scale = suml2 > 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        fit(iscale, &sumlx, &suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            assign(iscale);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Asymmetric quants L in [0, nmax] with value scale * L - the_min, minimising the weighted
// squared error over nstep + 1 candidate scales (the reference's make_qkx3_quants).
float make_qkx3_quants_w(int n, int nmax, const float* x, const float* w, uint8_t* L,
                         float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = w[0] * x[0];
    for (int i = 1; i < n; ++i) {
        min = std::min(min, x[i]);
        max = std::max(max, x[i]);
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max <= min) {
        std::memset(L, 0, static_cast<size_t>(n));
        *the_min = -min;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_err = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<uint8_t>(clampi(nearest_int(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * L[i] + min - x[i];
        best_err += w[i] * diff * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = static_cast<uint8_t>(l);
            sum_l += w[i] * static_cast<float>(l);
            sum_l2 += w[i] * static_cast<float>(l * l);
            sum_xl += w[i] * static_cast<float>(l) * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D <= 0) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = this_scale * Laux[i] + this_min - x[i];
            err += w[i] * diff * diff;
        }
        if (err < best_err) {
            std::memcpy(L, Laux, static_cast<size_t>(n));
            best_err = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

// Non-negative quants L in [0, nmax] of non-negative x (sub-block scales or mins) with one
// weighted least-squares scale, refined by moving single levels (make_qp_quants).
float make_qp_quants_w(int n, int nmax, const float* x, uint8_t* L, const float* w) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    if (max <= 0) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / max;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - static_cast<float>(nearest_int(iscale * x[i])) / iscale;
        best_mse += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * static_cast<float>(l);
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clampi(nearest_int(iscale * x[i]), 0, nmax);
        L[i] = static_cast<uint8_t>(l);
        sumlx += w[i] * x[i] * static_cast<float>(l);
        suml2 += w[i] * static_cast<float>(l * l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            float slx = sumlx - w[i] * x[i] * static_cast<float>(L[i]);
            float sl2 = suml2 - w[i] * static_cast<float>(L[i] * L[i]);
            if (slx > 0 && sl2 > 0) {
                const int new_l = clampi(nearest_int(x[i] * sl2 / slx), 0, nmax);
                if (new_l != L[i]) {
                    slx += w[i] * x[i] * static_cast<float>(new_l);
                    sl2 += w[i] * static_cast<float>(new_l * new_l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<uint8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0 ? sumlx / suml2 : 0.f;
}

// Block mean square times `factor`: the sigma^2 of the weights w = imp * sqrt(sigma^2 + x^2).
float block_sigma2(const float* x, int n, float factor) {
    float sum = 0;
    for (int i = 0; i < n; ++i) sum += x[i] * x[i];
    return factor * sum / static_cast<float>(n);
}

void weights_for(const float* x, const float* imp, int n, float sigma2, float* w) {
    for (int i = 0; i < n; ++i) w[i] = imp[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

void pack_2bit_k(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < kQK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) |
                                                 (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

void q2_K(const float* x, BlockQ2_K* y, const float* imp) {
    uint8_t L[kQK_K], Laux[16], Ls[16], Lm[16];
    float mins[16], scales[16], sw[16], w[16];
    const float sigma2 = block_sigma2(x, kQK_K, 1.f);
    for (int j = 0; j < 16; ++j) {
        weights_for(x + 16 * j, imp + 16 * j, 16, sigma2, w);
        sw[j] = 0;
        for (int l = 0; l < 16; ++l) sw[j] += w[l];
        scales[j] =
            make_qkx3_quants_w(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36);
    }
    const float dm0 = make_qp_quants_w(16, 15, scales, Ls, sw);
    const float mm0 = make_qp_quants_w(16, 15, mins, Lm, sw);
    y->d = f32_to_f16(dm0);
    y->dmin = f32_to_f16(mm0);
    const float dm = f16_to_f32(y->d), mm = f16_to_f32(y->dmin);
    for (int j = 0; j < 16; ++j) y->scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
    for (int j = 0; j < 16; ++j) {
        const float d = dm * static_cast<float>(y->scales[j] & 0xF);
        if (d == 0) continue;
        const float m = mm * static_cast<float>(y->scales[j] >> 4);
        for (int i = 0; i < 16; ++i)
            L[16 * j + i] =
                static_cast<uint8_t>(clampi(nearest_int((x[16 * j + i] + m) / d), 0, 3));
    }
    pack_2bit_k(L, y->qs);
}

void q3_K(const float* x, BlockQ3_K* y, const float* imp) {
    int8_t L[kQK_K], Ls[16];
    float scales[16], sw[16], w[16];
    const float sigma2 = block_sigma2(x, kQK_K, 2.f);
    for (int j = 0; j < 16; ++j) {
        weights_for(x + 16 * j, imp + 16 * j, 16, sigma2, w);
        sw[j] = 0;
        for (int l = 0; l < 16; ++l) sw[j] += w[l];
        scales[j] = make_qx_quants_w(16, 4, x + 16 * j, L + 16 * j, w);
    }
    std::memset(y->scales, 0, sizeof(y->scales));
    const float d_block = make_qx_quants_w(16, 32, scales, Ls, sw);
    for (int j = 0; j < 16; ++j) {
        int l = Ls[j];
        if (j < 8)
            y->scales[j] = static_cast<uint8_t>(l & 0xF);
        else
            y->scales[j - 8] = static_cast<uint8_t>(y->scales[j - 8] | ((l & 0xF) << 4));
        l >>= 4;
        y->scales[j % 4 + 8] = static_cast<uint8_t>(y->scales[j % 4 + 8] | (l << (2 * (j / 4))));
    }
    y->d = f32_to_f16(d_block);
    const float dd = f16_to_f32(y->d);
    for (int j = 0; j < 16; ++j) {
        const float d = dd * static_cast<float>(scale_q3_k(j, y->scales) - 32);
        if (d == 0) continue;
        for (int i = 0; i < 16; ++i)
            L[16 * j + i] = static_cast<int8_t>(clampi(nearest_int(x[16 * j + i] / d), -4, 3) + 4);
    }
    std::memset(y->hmask, 0, sizeof(y->hmask));
    uint8_t U[kQK_K];
    for (int j = 0; j < kQK_K; ++j) {
        int l = L[j];
        if (l > 3) {
            y->hmask[j % 32] = static_cast<uint8_t>(y->hmask[j % 32] | (1 << (j / 32)));
            l -= 4;
        }
        U[j] = static_cast<uint8_t>(l);
    }
    pack_2bit_k(U, y->qs);
}

// q4_K / q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; L gets 0..nmax.
void k4_scales(const float* x, const float* imp, int nmax, uint8_t* L, uint16_t* d_out,
               uint16_t* dmin_out, uint8_t* packed) {
    uint8_t Laux[32], Ls[8], Lm[8];
    float w[32], mins[8], scales[8], sw[8];
    const float sigma2 = block_sigma2(x, kQK_K, 2.f);
    for (int j = 0; j < 8; ++j) {
        weights_for(x + 32 * j, imp + 32 * j, 32, sigma2, w);
        sw[j] = 0;
        for (int l = 0; l < 32; ++l) sw[j] += w[l];
        scales[j] = make_qkx3_quants_w(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], Laux, -0.9f,
                                       0.05f, 36);
    }
    const float d_block = make_qp_quants_w(8, 63, scales, Ls, sw);
    const float m_block = make_qp_quants_w(8, 63, mins, Lm, sw);
    std::memset(packed, 0, 12);
    for (int j = 0; j < 8; ++j) {
        const uint8_t ls = Ls[j], lm = Lm[j];
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
            packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((ls >> 4) << 6));
            packed[j] = static_cast<uint8_t>(packed[j] | ((lm >> 4) << 6));
        }
    }
    *d_out = f32_to_f16(d_block);
    *dmin_out = f32_to_f16(m_block);
    const float dd = f16_to_f32(*d_out), dm = f16_to_f32(*dmin_out);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, packed, &sc, &m);
        const float d = dd * sc;
        if (d == 0) continue;
        const float mn = dm * m;
        for (int i = 0; i < 32; ++i)
            L[32 * j + i] =
                static_cast<uint8_t>(clampi(nearest_int((x[32 * j + i] + mn) / d), 0, nmax));
    }
}

void q4_K(const float* x, BlockQ4_K* y, const float* imp) {
    uint8_t L[kQK_K];
    uint16_t d, dmin;  // locals: the block's fields are unaligned
    k4_scales(x, imp, 15, L, &d, &dmin, y->scales);
    y->d = d;
    y->dmin = dmin;
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l)
            y->qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
}

void q5_K(const float* x, BlockQ5_K* y, const float* imp) {
    uint8_t L[kQK_K];
    uint16_t d, dmin;
    k4_scales(x, imp, 31, L, &d, &dmin, y->scales);
    y->d = d;
    y->dmin = dmin;
    std::memset(y->qh, 0, sizeof(y->qh));
    for (int e = 0; e < kQK_K; ++e)
        if (L[e] > 15) y->qh[e % 32] = static_cast<uint8_t>(y->qh[e % 32] | (1 << (e / 32)));
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l)
            y->qs[32 * c + l] =
                static_cast<uint8_t>((L[64 * c + l] & 0xF) | ((L[64 * c + 32 + l] & 0xF) << 4));
}

void q6_K(const float* x, BlockQ6_K* y, const float* imp) {
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
        const float scale = make_qx_quants_w(16, 32, x + 16 * ib, L + 16 * ib, imp + 16 * ib);
        scales[ib] = scale;
        if (std::fabs(scale) > max_abs_scale) {
            max_abs_scale = std::fabs(scale);
            max_scale = scale;
        }
    }
    if (max_abs_scale < kGroupMaxEps) {
        std::memset(y, 0, sizeof(*y));
        return;
    }
    const float iscale = -128.f / max_scale;
    y->d = f32_to_f16(1 / iscale);
    for (int ib = 0; ib < 16; ++ib)
        y->scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    const float dd = f16_to_f32(y->d);
    for (int j = 0; j < 16; ++j) {
        const float d = dd * y->scales[j];
        if (d == 0) continue;
        for (int i = 0; i < 16; ++i)
            L[16 * j + i] =
                static_cast<int8_t>(clampi(nearest_int(x[16 * j + i] / d), -32, 31) + 32);
    }
    for (int h = 0; h < 2; ++h) {
        const int8_t* Lh = L + 128 * h;
        uint8_t* ql = y->ql + 64 * h;
        uint8_t* qh = y->qh + 32 * h;
        for (int l = 0; l < 32; ++l) {
            ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
            ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
            qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                         ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
        }
    }
}

int best_index_iq4(float x) {
    const int8_t* val = kIq4nlValues;
    if (x <= val[0]) return 0;
    if (x >= val[15]) return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - static_cast<float>(val[mu - 1]) < static_cast<float>(val[mu]) - x ? mu - 1 : mu;
}

// The weighted best scale of one 32-value iq4 block (ntry 7 each way); L gets the indices.
float iq4_block(const float* xb, const float* w, uint8_t* L) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
        if (std::fabs(xb[j]) > amax) {
            amax = std::fabs(xb[j]);
            max = xb[j];
        }
    }
    if (amax < kGroupMaxEps) {
        std::memset(L, 0, 32);
        return 0.f;
    }
    auto fit = [&](float id, float* sumqx, float* sumq2, bool keep) {
        *sumqx = *sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const int l = best_index_iq4(id * xb[j]);
            if (keep) L[j] = static_cast<uint8_t>(l);
            const float q = kIq4nlValues[l];
            *sumqx += w[j] * q * xb[j];
            *sumq2 += w[j] * q * q;
        }
    };
    constexpr int ntry = 7;
    float d = -max / kIq4nlValues[0];
    float sumqx, sumq2;
    fit(1 / d, &sumqx, &sumq2, true);
    d = sumq2 > 0 ? sumqx / sumq2 : d;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
        const float id = (static_cast<float>(itry) + kIq4nlValues[0]) / max;
        fit(id, &sumqx, &sumq2, false);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

void iq4_assign(const float* xb, float d, uint8_t* L) {
    const float id = d != 0 ? 1 / d : 0.f;
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(best_index_iq4(id * xb[j]));
}

void iq4_pack(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[16 + j] << 4));
}

void iq4_nl(const float* x, BlockIQ4_NL* y, const float* imp) {
    float w[32];
    uint8_t L[32];
    weights_for(x, imp, 32, block_sigma2(x, 32, 2.f), w);
    const float d = iq4_block(x, w, L);
    y->d = f32_to_f16(d);
    iq4_assign(x, d, L);
    iq4_pack(L, y->qs);
}

void iq4_xs(const float* x, BlockIQ4_XS* y, const float* imp) {
    float w[32], scales[8];
    uint8_t L[kQK_K];
    const float sigma2 = block_sigma2(x, kQK_K, 2.f);
    float max_scale = 0, amax_scale = 0;
    for (int s = 0; s < 8; ++s) {
        weights_for(x + 32 * s, imp + 32 * s, 32, sigma2, w);
        scales[s] = iq4_block(x + 32 * s, w, L + 32 * s);
        if (std::fabs(scales[s]) > amax_scale) {
            amax_scale = std::fabs(scales[s]);
            max_scale = scales[s];
        }
    }
    const float d = -max_scale / 32;
    const float id = d != 0 ? 1 / d : 0.f;
    y->d = f32_to_f16(d);
    y->scales_h = 0;
    std::memset(y->scales_l, 0, sizeof(y->scales_l));
    for (int s = 0; s < 8; ++s) {
        const int l = clampi(nearest_int(id * scales[s]), -32, 31);
        iq4_assign(x + 32 * s, d * static_cast<float>(l), L + 32 * s);
        const int stored = l + 32;
        y->scales_l[s / 2] =
            static_cast<uint8_t>(y->scales_l[s / 2] | ((stored & 0xF) << (4 * (s % 2))));
        y->scales_h = static_cast<uint16_t>(y->scales_h | ((stored >> 4) << (2 * s)));
    }
    for (int s = 0; s < 8; ++s) iq4_pack(L + 32 * s, y->qs + 16 * s);
}

template <class Block, int N>
void each_block(const float* src, void* dst, int64_t n, const float* imp,
                void (*fn)(const float*, Block*, const float*)) {
    auto* b = static_cast<Block*>(dst);
    for (int64_t i = 0; i < n / N; ++i) fn(src + i * N, b + i, imp + i * N);
}

}  // namespace

bool has_weighted_quantization(DType type) {
    switch (type) {
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::IQ4_NL:
        case DType::IQ4_XS:
            return true;
        default:
            return false;
    }
}

void quantize_row_weighted(DType type, const float* src, void* dst, int64_t n,
                           const float* importance) {
    if (!importance || !has_weighted_quantization(type)) return quantize_row(type, src, dst, n);
    switch (type) {
        case DType::Q2_K:
            return each_block<BlockQ2_K, kQK_K>(src, dst, n, importance, q2_K);
        case DType::Q3_K:
            return each_block<BlockQ3_K, kQK_K>(src, dst, n, importance, q3_K);
        case DType::Q4_K:
            return each_block<BlockQ4_K, kQK_K>(src, dst, n, importance, q4_K);
        case DType::Q5_K:
            return each_block<BlockQ5_K, kQK_K>(src, dst, n, importance, q5_K);
        case DType::Q6_K:
            return each_block<BlockQ6_K, kQK_K>(src, dst, n, importance, q6_K);
        case DType::IQ4_NL:
            return each_block<BlockIQ4_NL, kQK>(src, dst, n, importance, iq4_nl);
        case DType::IQ4_XS:
            return each_block<BlockIQ4_XS, kQK_K>(src, dst, n, importance, iq4_xs);
        default:
            return quantize_row(type, src, dst, n);
    }
}

}  // namespace sd
