// AVX2 GEMM microkernel and packing (compiled with -mavx2 -mfma -mf16c).
//
// Register tile: 6 rows of A x 16 rows of B = 6 x 2 ymm accumulators (12 of the 16
// registers, plus 2 for the B vectors and 1 for the broadcast); per k step 2 loads, 6
// broadcasts, 12 FMAs. Edge tiles run instantiations with fewer rows / vectors and store
// through masks. Packed layouts as in gemm.cpp: a[k * 6 + i], b[k * 16 + j]; packing
// transposes blocks of 8 rows x 8 k in registers, converting f16 / bf16 on load. Measured
// at ~90% of the 256-bit FMA peak on Zen 5 (linear 4096 x 1280 x 1280, two threads).
// Also here: conv2d's zero-padded row copies and the dot products for at most 4 rows of A.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ops/cpu/gemm.h"
#include "tensor/half.h"

namespace sd::cpu {
namespace {

constexpr int kMr = 6;
constexpr int kNv = 2;
constexpr int kNr = 8 * kNv;

// Lane mask for maskload / maskstore: lanes < n set.
inline __m256i lane_mask(int n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(std::clamp(n, 0, 8)), idx);
}

// With Offsets, B for step k is read unaligned at b + b_offsets[k] (offset_kernel).
template <int M, int NV, bool Offsets = false>
void tile_kernel(const GemmTile& t) {
    const int64_t kc = t.kc, a_step = t.a_step, ldc = t.ldc;
    const float* b = t.b;
    const int32_t* off = t.b_offsets;
    const float* a_rows[M];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) a_rows[i] = t.a + i * t.a_row;
    float* c = t.c;
    const int nr_valid = t.nr;
    const bool first = t.first;
    const float *bias_m = t.bias_m, *bias_n = t.bias_n;
    __m256 acc[M][NV];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
    }
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; ++k) {
        __m256 bv[NV];
        const float* bk = Offsets ? b + off[k] : b + k * kNr;
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v)
            bv[v] = Offsets ? _mm256_loadu_ps(bk + 8 * v) : _mm256_load_ps(bk + 8 * v);
#pragma GCC unroll 8
        for (int i = 0; i < M; ++i) {
            __m256 av = _mm256_broadcast_ss(a_rows[i] + k * a_step);
#pragma GCC unroll 2
            for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
        }
    }
    __m256i mask[NV];
    __m256 bn[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
        mask[v] = lane_mask(nr_valid - 8 * v);
        bn[v] = first && bias_n ? _mm256_maskload_ps(bias_n + 8 * v, mask[v]) : _mm256_setzero_ps();
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
        float* ci = c + i * ldc;
        const __m256 bm = first && bias_m ? _mm256_set1_ps(bias_m[i]) : _mm256_setzero_ps();
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) {
            __m256 add = first ? _mm256_add_ps(bm, bn[v]) : _mm256_maskload_ps(ci + 8 * v, mask[v]);
            __m256 r = _mm256_add_ps(acc[i][v], add);
            if (t.add) r = _mm256_add_ps(r, _mm256_maskload_ps(t.add + i * ldc + 8 * v, mask[v]));
            if (t.leaky) {
                const __m256 neg = _mm256_cmp_ps(r, _mm256_setzero_ps(), _CMP_LT_OQ);
                r = _mm256_blendv_ps(r, _mm256_mul_ps(r, _mm256_set1_ps(t.leaky_slope)), neg);
            }
            _mm256_maskstore_ps(ci + 8 * v, mask[v], r);
        }
    }
}

using TileFn = void (*)(const GemmTile&);

template <int M, bool Offsets>
constexpr TileFn tile_for_vectors(int nv) {
    return nv == 1 ? tile_kernel<M, 1, Offsets> : tile_kernel<M, 2, Offsets>;
}

template <bool Offsets>
TileFn tile_for(int m, int nv) {
    switch (m) {
        case 1:
            return tile_for_vectors<1, Offsets>(nv);
        case 2:
            return tile_for_vectors<2, Offsets>(nv);
        case 3:
            return tile_for_vectors<3, Offsets>(nv);
        case 4:
            return tile_for_vectors<4, Offsets>(nv);
        case 5:
            return tile_for_vectors<5, Offsets>(nv);
        default:
            return tile_for_vectors<6, Offsets>(nv);
    }
}

template <bool Offsets>
void any_tile(const GemmTile& t) {
    if (t.mr == kMr && t.nr == kNr) {
        tile_kernel<kMr, kNv, Offsets>(t);
    } else {
        tile_for<Offsets>(t.mr, (t.nr + 7) / 8)(t);
    }
}

void kernel(const GemmTile& t) {
    any_tile<false>(t);
}

void offset_kernel(const GemmTile& t) {
    any_tile<true>(t);
}

// ---- packing ----

// In-register transpose of 8 rows of 8 floats: on return r[t] holds column t.
inline void transpose8(__m256 r[8]) {
    __m256 t[8], s[8];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        t[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
        s[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
        s[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
        s[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        s[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
    }
}

// 8 values of a row as f32.
template <DType D>
inline __m256 load_row8(const void* p) {
    if constexpr (D == DType::F32) {
        return _mm256_loadu_ps(static_cast<const float*>(p));
    } else if constexpr (D == DType::F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    } else {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
}

template <DType D>
float load_scalar(const void* p) {
    if constexpr (D == DType::F32) {
        return *static_cast<const float*>(p);
    } else if constexpr (D == DType::F16) {
        return f16_to_f32(*static_cast<const uint16_t*>(p));
    } else {
        return bf16_to_f32(*static_cast<const uint16_t*>(p));
    }
}

template <DType D>
void pack_rows_typed(const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    using Elem = std::conditional_t<D == DType::F32, float, uint16_t>;
    const Elem* s = static_cast<const Elem*>(src);
    const int64_t k_full = kc / 8 * 8;
    for (int g = 0; g * 8 < R; ++g) {
        const int rows = std::clamp(nr_valid - 8 * g, 0, 8);
        const __m256i lanes = lane_mask(R - 8 * g);
        float* d = dst + 8 * g;
        const Elem* sg = s + 8 * g * ld;
        for (int64_t k0 = 0; k0 < k_full; k0 += 8) {
            __m256 r[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; ++i) {
                r[i] = i < rows ? load_row8<D>(sg + i * ld + k0) : _mm256_setzero_ps();
            }
            transpose8(r);
#pragma GCC unroll 8
            for (int t = 0; t < 8; ++t) _mm256_maskstore_ps(d + (k0 + t) * R, lanes, r[t]);
        }
        const int width = std::min(8, R - 8 * g);
        for (int64_t k = k_full; k < kc; ++k) {
            for (int i = 0; i < width; ++i) {
                d[k * R + i] = i < rows ? load_scalar<D>(sg + i * ld + k) : 0.0f;
            }
        }
    }
}

void pack_rows(DType dtype, const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst,
               int R) {
    switch (dtype) {
        case DType::F16:
            pack_rows_typed<DType::F16>(src, ld, nr_valid, kc, dst, R);
            break;
        case DType::BF16:
            pack_rows_typed<DType::BF16>(src, ld, nr_valid, kc, dst, R);
            break;
        default:
            pack_rows_typed<DType::F32>(src, ld, nr_valid, kc, dst, R);
            break;
    }
}

void pack_cols(const float* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    for (int64_t k = 0; k < kc; ++k) {
        const float* s = src + k * ld;
        float* d = dst + k * R;
        for (int i = 0; i < R; i += 8) {
            __m256 v = _mm256_maskload_ps(s + i, lane_mask(nr_valid - i));
            _mm256_maskstore_ps(d + i, lane_mask(R - i), v);
        }
    }
}

void copy_padded(const float* row, int64_t w, int64_t iw0, int64_t step, float* d, int64_t n) {
    if (step != 1) {
        for (int64_t t = 0; t < n; ++t) {
            const int64_t iw = iw0 + t * step;
            d[t] = iw >= 0 && iw < w ? row[iw] : 0.0f;
        }
        return;
    }
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t t = 0; t < n; t += 8) {
        // Lanes [lo, hi) of this group of 8 read the row; the rest are zero.
        const int64_t iw = iw0 + t;
        const int lo = static_cast<int>(std::clamp<int64_t>(-iw, 0, 8));
        const int hi = static_cast<int>(std::clamp<int64_t>(std::min(w - iw, n - t), lo, 8));
        const __m256i mask = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), idx),
                                                 _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), idx));
        const __m256 v = _mm256_maskload_ps(row + iw, mask);
        _mm256_maskstore_ps(d + t, lane_mask(static_cast<int>(std::min<int64_t>(n - t, 8))), v);
    }
}

// ---- dot products for very few rows of A ----

inline float reduce_add(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// y[i][j] = x_i . w_j for i < M, j < kDotRows (callers point unused rows at row 0).
template <DType D, int M>
void dot_tile(const void* const* w, const float* const* x, int64_t k, float* y, int64_t ldy,
              int nw) {
    using Elem = std::conditional_t<D == DType::F32, float, uint16_t>;
    __m256 acc[M][kDotRows];
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 4
        for (int j = 0; j < kDotRows; ++j) acc[i][j] = _mm256_setzero_ps();
    }
    const int64_t k_full = k / 8 * 8;
    for (int64_t k0 = 0; k0 < k_full; k0 += 8) {
        __m256 wv[kDotRows];
#pragma GCC unroll 4
        for (int j = 0; j < kDotRows; ++j)
            wv[j] = load_row8<D>(static_cast<const Elem*>(w[j]) + k0);
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) {
            const __m256 xv = _mm256_loadu_ps(x[i] + k0);
#pragma GCC unroll 4
            for (int j = 0; j < kDotRows; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < nw; ++j) {
            float sum = reduce_add(acc[i][j]);
            for (int64_t q = k_full; q < k; ++q) {
                sum += x[i][q] * load_scalar<D>(static_cast<const Elem*>(w[j]) + q);
            }
            y[i * ldy + j] = sum;
        }
    }
}

template <DType D>
void dot_rows_typed(const void* w, int64_t ldw, int nw, const float* x, int64_t ldx, int m,
                    int64_t k, float* y, int64_t ldy) {
    using Elem = std::conditional_t<D == DType::F32, float, uint16_t>;
    const void* wr[kDotRows];
    const float* xr[kDotRows];
    for (int j = 0; j < kDotRows; ++j) wr[j] = static_cast<const Elem*>(w) + (j < nw ? j : 0) * ldw;
    for (int i = 0; i < kDotRows; ++i) xr[i] = x + (i < m ? i : 0) * ldx;
    switch (m) {
        case 1:
            dot_tile<D, 1>(wr, xr, k, y, ldy, nw);
            break;
        case 2:
            dot_tile<D, 2>(wr, xr, k, y, ldy, nw);
            break;
        case 3:
            dot_tile<D, 3>(wr, xr, k, y, ldy, nw);
            break;
        default:
            dot_tile<D, 4>(wr, xr, k, y, ldy, nw);
            break;
    }
}

void dot_rows(DType dtype, const void* w, int64_t ldw, int nw, const float* x, int64_t ldx, int m,
              int64_t k, float* y, int64_t ldy) {
    switch (dtype) {
        case DType::F16:
            dot_rows_typed<DType::F16>(w, ldw, nw, x, ldx, m, k, y, ldy);
            break;
        case DType::BF16:
            dot_rows_typed<DType::BF16>(w, ldw, nw, x, ldx, m, k, y, ldy);
            break;
        default:
            dot_rows_typed<DType::F32>(w, ldw, nw, x, ldx, m, k, y, ldy);
            break;
    }
}

const GemmKernels kKernels = {Isa::Avx2, kMr,         kNr,      kernel, pack_rows,
                              pack_cols, copy_padded, dot_rows, false,  offset_kernel};

}  // namespace

const GemmKernels& gemm_kernels_avx2() {
    return kKernels;
}

}  // namespace sd::cpu
