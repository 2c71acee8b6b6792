// Pieces shared by the AVX-512 GEMM kernels (gemm_avx512.cpp: f32, gemm_avx512_bf16.cpp:
// bf16 dot products): the 6 x 64 register tile, its epilogue and edge dispatch, lane masks
// and the 16 x 16 transpose of the packers. Include only from files compiled with the
// AVX-512 flags. Everything here has internal linkage, so each file keeps the copy built
// with its own flags.
#pragma once

#include <immintrin.h>

#include <algorithm>

#include "ops/cpu/gemm.h"

namespace sd::cpu {
namespace {

constexpr int kTileRows = 6;                  // MR: rows of A
constexpr int kTileVectors = 4;               // zmm vectors of B per row
constexpr int kTileCols = 16 * kTileVectors;  // NR: rows of B

// The first n of 16 lanes (n clamped to [0, 16]).
inline __mmask16 lane_mask(int n) {
    return n >= 16 ? static_cast<__mmask16>(0xffff)
                   : static_cast<__mmask16>((1u << std::max(n, 0)) - 1u);
}

// The start of a tile: its rows of A (t.a + i * t.a_row) and its accumulators, zeroed.
template <int M, int NV>
inline void start_tile(const GemmTile& t, const float* (&a_rows)[M], __m512 (&acc)[M][NV]) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
        a_rows[i] = t.a + i * t.a_row;
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
    }
}

// The epilogue of a tile: acc[i][v] holds C[i][16v .. 16v + 15]; stores the valid part
// (t.mr rows, t.nr columns) as C = acc + bias_m[i] + bias_n[j] on the first k block,
// C += acc after it, then the residual t.add and LeakyReLU where set.
template <int M, int NV>
inline void store_tile(const GemmTile& t, const __m512 (&acc)[M][NV]) {
    __mmask16 mask[NV];
    __m512 bn[NV];
    const bool first = t.first;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
        mask[v] = lane_mask(t.nr - 16 * v);
        bn[v] = first && t.bias_n ? _mm512_maskz_loadu_ps(mask[v], t.bias_n + 16 * v)
                                  : _mm512_setzero_ps();
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
        float* ci = t.c + i * t.ldc;
        const __m512 bm = first && t.bias_m ? _mm512_set1_ps(t.bias_m[i]) : _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            __m512 add =
                first ? _mm512_add_ps(bm, bn[v]) : _mm512_maskz_loadu_ps(mask[v], ci + 16 * v);
            __m512 r = _mm512_add_ps(acc[i][v], add);
            if (t.add)
                r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask[v], t.add + i * t.ldc + 16 * v));
            if (t.leaky) {
                const __mmask16 neg = _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_LT_OQ);
                r = _mm512_mask_mul_ps(r, neg, r, _mm512_set1_ps(t.leaky_slope));
            }
            _mm512_mask_storeu_ps(ci + 16 * v, mask[v], r);
        }
    }
}

// Runs Tile<M, NV>::run for the tile's valid rows of A and vectors of B: the full tile
// straight, edge tiles through instantiations with fewer rows / vectors.
template <template <int, int> class Tile, int M>
inline void run_rows(const GemmTile& t, int nv) {
    switch (nv) {
        case 1:
            return Tile<M, 1>::run(t);
        case 2:
            return Tile<M, 2>::run(t);
        case 3:
            return Tile<M, 3>::run(t);
        default:
            return Tile<M, 4>::run(t);
    }
}

template <template <int, int> class Tile>
inline void run_tile(const GemmTile& t) {
    if (t.mr == kTileRows && t.nr == kTileCols) return Tile<kTileRows, kTileVectors>::run(t);
    const int nv = (t.nr + 15) / 16;
    switch (t.mr) {
        case 1:
            return run_rows<Tile, 1>(t, nv);
        case 2:
            return run_rows<Tile, 2>(t, nv);
        case 3:
            return run_rows<Tile, 3>(t, nv);
        case 4:
            return run_rows<Tile, 4>(t, nv);
        case 5:
            return run_rows<Tile, 5>(t, nv);
        default:
            return run_rows<Tile, 6>(t, nv);
    }
}

// In-register transpose of 16 rows of 16 32-bit lanes: on return r[t] holds column t.
inline void transpose16(__m512 r[16]) {
    __m512 t[16], u[16];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
        t[2 * j] = _mm512_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        __m512d t0 = _mm512_castps_pd(t[4 * j]), t1 = _mm512_castps_pd(t[4 * j + 1]);
        __m512d t2 = _mm512_castps_pd(t[4 * j + 2]), t3 = _mm512_castps_pd(t[4 * j + 3]);
        u[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        u[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        u[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        u[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    // u[4j + c] lane L holds column 4L + c of rows 4j..4j+3: transpose the 128-bit lanes.
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
        __m512 x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE);
        __m512 y0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
        __m512 y1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
        r[c] = _mm512_shuffle_f32x4(x0, y0, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(x0, y0, 0xDD);
        r[8 + c] = _mm512_shuffle_f32x4(x1, y1, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(x1, y1, 0xDD);
    }
}

}  // namespace
}  // namespace sd::cpu
