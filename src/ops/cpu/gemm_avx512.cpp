// AVX-512 GEMM microkernel and packing (compiled with -mavx512f/bw/vl/dq -mfma -mf16c).
//
// Register tile: 6 rows of A x 64 rows of B = 6 x 4 zmm accumulators (24 of the 32
// registers); per k step 4 vector loads of the B panel, 6 broadcasts of A and 24 FMAs.
// On Zen 5 (two 512-bit FMA pipes, 4-cycle latency, two 512-bit loads per cycle) this
// runs at the FMA peak from L1/L2; 14x32, 12x32, 8x48 and 4x96 measured the same (within
// 2%), and 6x64 wastes the least on the usual shapes: N = 320..10240 and conv output
// channels are multiples of 64, and partial tiles of 1..5 rows keep 4..20 independent
// accumulators. Edge tiles run instantiations with fewer rows / vectors and masked loads
// and stores of C; the packed B panels are zero-padded to the full tile. A is broadcast
// from a[i * a_row + k * a_step]: a packed panel or f32 rows in place.
//
// Packed layouts (see gemm.cpp): A panel a[k * 6 + i], B panel b[k * 64 + j]. Rows of the
// source are contiguous in k, so packing is a transpose: for B, 16 rows x 16 k are loaded
// (converting f16 / bf16 to f32 in the load), transposed in registers with 64 shuffles and
// stored as 16 runs of 16 values; for A, 6 rows x 16 k become 96 consecutive floats with
// 18 two-source permutes.
//
// Also here: the zero-padded row copies of conv2d's patch gather (stride 1: plain or
// masked loads; stride 2: two loads and an even-lane permute; larger: gathers) and the
// dot products used for products with at most 4 rows of A.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_avx512_tile.h"

// GCC 12 reports its own AVX-512 intrinsics (which start from _mm512_undefined_*) as
// "may be used uninitialized" once they are inlined here: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace sd::cpu {
namespace {

constexpr int kMr = kTileRows;
constexpr int kNr = kTileCols;

// The tile kernel for M rows of A and NV vectors of B (M <= kMr, NV <= 4); with Offsets,
// B for step k is read unaligned at b + b_offsets[k] instead of from a packed panel.
template <bool Offsets, int M, int NV>
struct F32TileT {
    static void run(const GemmTile& t) {
        const int64_t kc = t.kc, a_step = t.a_step;
        const float* b = t.b;
        const int32_t* off = t.b_offsets;
        const float* a_rows[M];
        __m512 acc[M][NV];
        start_tile<M, NV>(t, a_rows, acc);
#pragma GCC unroll 2
        for (int64_t k = 0; k < kc; ++k) {
            __m512 bv[NV];
            const float* bk = Offsets ? b + off[k] : b + k * kNr;
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)
                bv[v] = Offsets ? _mm512_loadu_ps(bk + 16 * v) : _mm512_load_ps(bk + 16 * v);
#pragma GCC unroll 8
            for (int i = 0; i < M; ++i) {
                __m512 av = _mm512_set1_ps(a_rows[i][k * a_step]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
            }
        }
        store_tile<M, NV>(t, acc);
    }
};

template <int M, int NV>
using F32Tile = F32TileT<false, M, NV>;
template <int M, int NV>
using F32OffsetTile = F32TileT<true, M, NV>;

void kernel(const GemmTile& t) {
    run_tile<F32Tile>(t);
}

void offset_kernel(const GemmTile& t) {
    run_tile<F32OffsetTile>(t);
}

// ---- packing ----

// Up to 16 values of a row as f32, lanes past `mask` zero.
template <DType D>
inline __m512 load_row(const void* p, __mmask16 mask) {
    if constexpr (D == DType::F32) {
        return _mm512_maskz_loadu_ps(mask, p);
    } else if constexpr (D == DType::F16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
    } else {
        __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
}

template <DType D>
void pack_rows_typed(const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    using Elem = std::conditional_t<D == DType::F32, float, uint16_t>;
    const Elem* s = static_cast<const Elem*>(src);
    for (int g = 0; g * 16 < R; ++g) {
        const int rows = std::min(16, nr_valid - 16 * g);
        const __mmask16 lanes = lane_mask(R - 16 * g);
        float* d = dst + 16 * g;
        if (rows <= 0) {
            for (int64_t k = 0; k < kc; ++k)
                _mm512_mask_storeu_ps(d + k * R, lanes, _mm512_setzero_ps());
            continue;
        }
        const Elem* sg = s + 16 * g * ld;
        for (int64_t k0 = 0; k0 < kc; k0 += 16) {
            const int kw = static_cast<int>(std::min<int64_t>(16, kc - k0));
            const __mmask16 kmask = lane_mask(kw);
            __m512 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) {
                r[i] = i < rows ? load_row<D>(sg + i * ld + k0, kmask) : _mm512_setzero_ps();
            }
            transpose16(r);
            if (kw == 16) {
#pragma GCC unroll 16
                for (int t = 0; t < 16; ++t) _mm512_mask_storeu_ps(d + (k0 + t) * R, lanes, r[t]);
            } else {
                for (int t = 0; t < kw; ++t) _mm512_mask_storeu_ps(d + (k0 + t) * R, lanes, r[t]);
            }
        }
    }
}

// Lane tables of the 6-row interleave below: for output vector v (floats 16v..16v+15 of the
// 96 that 16 k steps of a 6-row panel take), lane l holds row i = f % 6 at step k = f / 6,
// f = 16v + l. Rows are first paired (p = i / 2, e = i % 2): pair p's vector for steps
// 8h..8h+7 holds row 2p + e at step 8h + j in lane 2j + e.
struct Interleave6 {
    int32_t from01[6][16];  // lanes of pairs 0 (index < 16) and 1 (index >= 16)
    int32_t from2[6][16];   // lanes of pair 2
    uint16_t pair2[6];      // which lanes come from pair 2
};

constexpr Interleave6 make_interleave6() {
    Interleave6 t{};
    for (int v = 0; v < 6; ++v) {
        for (int l = 0; l < 16; ++l) {
            const int f = 16 * v + l, k = f / 6, i = f % 6, pair = i / 2;
            const int lane = 2 * (k % 8) + i % 2;
            t.from01[v][l] = pair == 1 ? lane + 16 : lane;
            t.from2[v][l] = lane;
            if (pair == 2) t.pair2[v] = static_cast<uint16_t>(t.pair2[v] | (1u << l));
        }
    }
    return t;
}

constexpr Interleave6 kInterleave6 = make_interleave6();

// Packing into 6-row panels (the A side): 16 steps of k of 6 rows are 96 consecutive floats,
// built with 18 two-source permutes instead of a 16 x 16 transpose of mostly zeros.
template <DType D>
void pack_rows6(const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst) {
    using Elem = std::conditional_t<D == DType::F32, float, uint16_t>;
    const Elem* s = static_cast<const Elem*>(src);
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    const int64_t k_full = kc / 16 * 16;
    for (int64_t k0 = 0; k0 < k_full; k0 += 16) {
        __m512 r[6];
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i) {
            r[i] = i < nr_valid ? load_row<D>(s + i * ld + k0, 0xffff) : _mm512_setzero_ps();
        }
        __m512 pairs[2][3];  // [steps 0-7 / 8-15][pair]
#pragma GCC unroll 3
        for (int p = 0; p < 3; ++p) {
            pairs[0][p] = _mm512_permutex2var_ps(r[2 * p], lo, r[2 * p + 1]);
            pairs[1][p] = _mm512_permutex2var_ps(r[2 * p], hi, r[2 * p + 1]);
        }
        float* d = dst + k0 * 6;
#pragma GCC unroll 6
        for (int v = 0; v < 6; ++v) {
            const int h = v / 3;  // vectors 0-2 cover steps 0-7, vectors 3-5 steps 8-15
            const __m512i from01 = _mm512_loadu_si512(kInterleave6.from01[v]);
            const __m512i from2 = _mm512_loadu_si512(kInterleave6.from2[v]);
            __m512 out = _mm512_permutex2var_ps(pairs[h][0], from01, pairs[h][1]);
            out = _mm512_mask_permutexvar_ps(out, kInterleave6.pair2[v], from2, pairs[h][2]);
            _mm512_storeu_ps(d + 16 * v, out);
        }
    }
    if (k_full < kc) {
        pack_rows_typed<D>(s + k_full, ld, nr_valid, kc - k_full, dst + k_full * 6, 6);
    }
}

template <DType D>
void pack_rows_any(const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    if (R == 6) {
        pack_rows6<D>(src, ld, nr_valid, kc, dst);
    } else {
        pack_rows_typed<D>(src, ld, nr_valid, kc, dst, R);
    }
}

void pack_rows(DType dtype, const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst,
               int R) {
    switch (dtype) {
        case DType::F16:
            pack_rows_any<DType::F16>(src, ld, nr_valid, kc, dst, R);
            break;
        case DType::BF16:
            pack_rows_any<DType::BF16>(src, ld, nr_valid, kc, dst, R);
            break;
        default:
            pack_rows_any<DType::F32>(src, ld, nr_valid, kc, dst, R);
            break;
    }
}

void pack_cols(const float* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    for (int64_t k = 0; k < kc; ++k) {
        const float* s = src + k * ld;
        float* d = dst + k * R;
        for (int i = 0; i < R; i += 16) {
            __m512 v = _mm512_maskz_loadu_ps(lane_mask(nr_valid - i), s + i);
            _mm512_mask_storeu_ps(d + i, lane_mask(R - i), v);
        }
    }
}

// Lanes l of a 16-float load at column iw whose column iw + l is inside [0, w).
inline __mmask16 inside_mask(int64_t iw, int64_t w) {
    const int lo = static_cast<int>(std::clamp<int64_t>(-iw, 0, 16));
    const int hi = static_cast<int>(std::clamp<int64_t>(w - iw, lo, 16));
    return lane_mask(hi) & static_cast<__mmask16>(~lane_mask(lo));
}

void copy_padded(const float* row, int64_t w, int64_t iw0, int64_t step, float* d, int64_t n) {
    const int64_t limit = INT32_MAX / 4;
    if (step > 2 && (w > limit || iw0 < -limit || iw0 > limit || step * n > limit)) {
        // Columns that do not fit the 32-bit gather indices.
        for (int64_t t = 0; t < n; ++t) {
            const int64_t iw = iw0 + t * step;
            d[t] = iw >= 0 && iw < w ? row[iw] : 0.0f;
        }
        return;
    }
    const __m512i evens =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t t = 0; t < n; t += 16) {
        const int64_t iw = iw0 + t * step;
        const __mmask16 out = lane_mask(static_cast<int>(std::min<int64_t>(n - t, 16)));
        __m512 v;
        if (step == 1) {
            if (iw >= 0 && iw + 16 <= w && n - t >= 16) {
                _mm512_storeu_ps(d + t, _mm512_loadu_ps(row + iw));
                continue;
            }
            v = _mm512_maskz_loadu_ps(inside_mask(iw, w) & out, row + iw);
        } else if (step == 2) {
            // Even columns of 32: two loads, then pick every other lane.
            const __m512 lo = _mm512_maskz_loadu_ps(inside_mask(iw, w), row + iw);
            const __m512 hi = _mm512_maskz_loadu_ps(inside_mask(iw + 16, w), row + iw + 16);
            v = _mm512_permutex2var_ps(lo, evens, hi);
        } else {
            const __m512i col = _mm512_add_epi32(
                _mm512_set1_epi32(static_cast<int>(iw)),
                _mm512_mullo_epi32(lanes, _mm512_set1_epi32(static_cast<int>(step))));
            const __mmask16 inside =
                _mm512_cmpge_epi32_mask(col, _mm512_setzero_si512()) &
                _mm512_cmplt_epi32_mask(col, _mm512_set1_epi32(static_cast<int>(w)));
            v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), inside & out, col, row, 4);
        }
        _mm512_mask_storeu_ps(d + t, out, v);
    }
}

// ---- dot products for very few rows of A ----

// y[i][j] = x_i . w_j for i < M, j < kDotRows (callers point unused rows at row 0).
template <DType D, int M>
void dot_tile(const void* const* w, const float* const* x, int64_t k, float* y, int64_t ldy,
              int nw) {
    using Elem = std::conditional_t<D == DType::F32, float, uint16_t>;
    __m512 acc[M][kDotRows];
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 4
        for (int j = 0; j < kDotRows; ++j) acc[i][j] = _mm512_setzero_ps();
    }
    for (int64_t k0 = 0; k0 < k; k0 += 16) {
        const __mmask16 mask = lane_mask(static_cast<int>(std::min<int64_t>(16, k - k0)));
        __m512 wv[kDotRows];
#pragma GCC unroll 4
        for (int j = 0; j < kDotRows; ++j)
            wv[j] = load_row<D>(static_cast<const Elem*>(w[j]) + k0, mask);
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x[i] + k0);
#pragma GCC unroll 4
            for (int j = 0; j < kDotRows; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < nw; ++j) y[i * ldy + j] = _mm512_reduce_add_ps(acc[i][j]);
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

const GemmKernels kKernels = {Isa::Avx512, kMr,         kNr,      kernel, pack_rows,
                              pack_cols,   copy_padded, dot_rows, false,  offset_kernel};

}  // namespace

const GemmKernels& gemm_kernels_avx512() {
    return kKernels;
}

}  // namespace sd::cpu
