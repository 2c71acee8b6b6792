// Internal interface of the Winograd F(4x4, 3x3) transforms of conv2d (ops/conv_winograd.cpp):
// the input transform V = B^T d B of 6 x 6 input tiles and the output transform
// Y = A^T M A of their 36 products, vectorised across tiles (tile t's values lie at index t
// of 36 planes). The loops are written once below as plain loops over the tiles; the
// per-ISA files (winograd_avx2.cpp, winograd_avx512.cpp) and the generic table compile them
// with their own flags, and the compiler vectorises them.
//
// The matrices are those of Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks" (2015), interpolation points 0, +-1, +-2, infinity:
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
//          0 4 0 -5 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
//   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
// and the weight's transform U = G g G^T, made on each call, is vectorised across channels.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"

namespace sd::cpu {

// Tiles one transform call takes at most (the GEMM's NR: 64 on AVX-512).
constexpr int kWinogradMaxTiles = 64;
// Rows of the A panels the weight transform takes at most (the GEMM's MR: 6 on x86).
constexpr int kWinogradMaxMr = 8;

struct WinogradKernels {
    // seg[r] (r < 6) holds 4n + 4 values of input row r from the first tile's left column on
    // (tile t covers values 4t .. 4t + 5). Writes v[xi * vs + t] = (B^T d_t B)[i][l] for
    // xi = 6 i + l, t < n <= kWinogradMaxTiles.
    void (*input)(const float* const* seg, int n, float* v, int64_t vs);
    // m[xi * ms + t]: tile t's 36 products. Stores rows p < rows and columns x < cols of
    // the tiles' 4 x 4 outputs side by side: out[p * ld + x] = act(y + bias + res[p * ld + x])
    // with y = (A^T m_t A)[p][x % 4] of tile t = x / 4, res optional (null), act: values
    // below 0 times slope when leaky.
    void (*output)(const float* m, int64_t ms, int n, int rows, int cols, float bias,
                   const float* res, float* out, int64_t ld, bool leaky, float slope);
    // rows[(k * 9 + tap) * mr + i]: the 3 x 3 kernels of mr <= kWinogradMaxMr output
    // channels i and c input channels k (as GemmKernels::pack_rows lays them out). Writes
    // u[xi * us + k * mr + i] = (G g G^T)[xi] for each: an A panel of the products per xi.
    void (*weight)(const float* rows, int64_t c, int mr, float* u, int64_t us);
};

const WinogradKernels& winograd_kernels(Isa isa);  // lowered to what this build has
#ifdef SD_X86_KERNELS
const WinogradKernels& winograd_kernels_avx2();
const WinogradKernels& winograd_kernels_avx512();
#endif

namespace winograd_loops {
namespace {

inline void input(const float* const* seg, int n, float* __restrict v, int64_t vs) {
    constexpr int N = kWinogradMaxTiles;
    // ph[r][k][t] = seg[r][4t + k]: the input's columns by phase, so that column 4t + j of
    // every tile is one contiguous run (j = 4, 5 are phases 0, 1 one tile on).
    alignas(64) float ph[6][4][N + 1];
    alignas(64) float w[6][6][N];  // w[r][l][t] = (d_t B)[r][l]
    for (int r = 0; r < 6; ++r) {
        const float* __restrict s = seg[r];
        for (int t = 0; t <= n; ++t) {
            ph[r][0][t] = s[4 * t];
            ph[r][1][t] = s[4 * t + 1];
            ph[r][2][t] = s[4 * t + 2];
            ph[r][3][t] = s[4 * t + 3];
        }
        const float *p0 = ph[r][0], *p1 = ph[r][1], *p2 = ph[r][2], *p3 = ph[r][3];
        float *w0 = w[r][0], *w1 = w[r][1], *w2 = w[r][2], *w3 = w[r][3], *w4 = w[r][4],
              *w5 = w[r][5];
#pragma GCC ivdep
        for (int t = 0; t < n; ++t) {
            const float x0 = p0[t], x1 = p1[t], x2 = p2[t], x3 = p3[t], x4 = p0[t + 1],
                        x5 = p1[t + 1];
            const float a13 = x1 - x3;
            w0[t] = 4.0f * x0 - 5.0f * x2 + x4;
            w1[t] = -4.0f * (x1 + x2) + x3 + x4;
            w2[t] = 4.0f * (x1 - x2) - x3 + x4;
            w3[t] = -2.0f * a13 - x2 + x4;
            w4[t] = 2.0f * a13 - x2 + x4;
            w5[t] = 4.0f * x1 - 5.0f * x3 + x5;
        }
    }
    for (int l = 0; l < 6; ++l) {
        const float *r0 = w[0][l], *r1 = w[1][l], *r2 = w[2][l], *r3 = w[3][l], *r4 = w[4][l],
                    *r5 = w[5][l];
        float* __restrict v0 = v + l * vs;
#pragma GCC ivdep
        for (int t = 0; t < n; ++t) {
            const float x0 = r0[t], x1 = r1[t], x2 = r2[t], x3 = r3[t], x4 = r4[t], x5 = r5[t];
            const float a13 = x1 - x3;
            v0[t] = 4.0f * x0 - 5.0f * x2 + x4;
            v0[6 * vs + t] = -4.0f * (x1 + x2) + x3 + x4;
            v0[12 * vs + t] = 4.0f * (x1 - x2) - x3 + x4;
            v0[18 * vs + t] = -2.0f * a13 - x2 + x4;
            v0[24 * vs + t] = 2.0f * a13 - x2 + x4;
            v0[30 * vs + t] = 4.0f * x1 - 5.0f * x3 + x5;
        }
    }
}

inline void output(const float* m, int64_t ms, int n, int rows, int cols, float bias,
                   const float* res, float* out, int64_t ld, bool leaky, float slope) {
    constexpr int N = kWinogradMaxTiles;
    alignas(64) float s[4][6][N];  // s[p][l][t] = (A^T m_t)[p][l]
    alignas(64) float y[4 * N];    // one output row of the tiles, side by side
    for (int l = 0; l < 6; ++l) {
        const float *m0 = m + l * ms, *m1 = m0 + 6 * ms, *m2 = m0 + 12 * ms, *m3 = m0 + 18 * ms,
                    *m4 = m0 + 24 * ms, *m5 = m0 + 30 * ms;
        float *s0 = s[0][l], *s1 = s[1][l], *s2 = s[2][l], *s3 = s[3][l];
#pragma GCC ivdep
        for (int t = 0; t < n; ++t) {
            const float p12 = m1[t] + m2[t], d12 = m1[t] - m2[t];
            const float p34 = m3[t] + m4[t], d34 = m3[t] - m4[t];
            s0[t] = m0[t] + p12 + p34;
            s1[t] = d12 + 2.0f * d34;
            s2[t] = p12 + 4.0f * p34;
            s3[t] = d12 + 8.0f * d34 + m5[t];
        }
    }
    for (int p = 0; p < rows; ++p) {
        const float *q0 = s[p][0], *q1 = s[p][1], *q2 = s[p][2], *q3 = s[p][3], *q4 = s[p][4],
                    *q5 = s[p][5];
#pragma GCC ivdep
        for (int t = 0; t < n; ++t) {
            const float p12 = q1[t] + q2[t], d12 = q1[t] - q2[t];
            const float p34 = q3[t] + q4[t], d34 = q3[t] - q4[t];
            y[4 * t] = q0[t] + p12 + p34 + bias;
            y[4 * t + 1] = d12 + 2.0f * d34 + bias;
            y[4 * t + 2] = p12 + 4.0f * p34 + bias;
            y[4 * t + 3] = d12 + 8.0f * d34 + q5[t] + bias;
        }
        float* __restrict o = out + p * ld;
        const float* rp = res ? res + p * ld : nullptr;
        if (rp) {
            for (int x = 0; x < cols; ++x) y[x] += rp[x];
        }
        if (leaky) {
            for (int x = 0; x < cols; ++x) o[x] = y[x] < 0.0f ? y[x] * slope : y[x];
        } else {
            for (int x = 0; x < cols; ++x) o[x] = y[x];
        }
    }
}

inline void weight(const float* rows, int64_t c, int mr, float* __restrict u, int64_t us) {
    constexpr int kChannels = 32;                  // input channels at a time
    constexpr int Q = kChannels * kWinogradMaxMr;  // lanes q = k * mr + i
    constexpr float g[6][3] = {{1.0f / 4, 0, 0},
                               {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                               {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                               {1.0f / 24, 1.0f / 12, 1.0f / 6},
                               {1.0f / 24, -1.0f / 12, 1.0f / 6},
                               {0, 0, 1}};
    for (int64_t c0 = 0; c0 < c; c0 += kChannels) {
        const int nc = static_cast<int>(c - c0 < kChannels ? c - c0 : kChannels), n = nc * mr;
        alignas(64) float k[9][Q];  // k[tap][q]
        for (int j = 0; j < nc; ++j)
            for (int tap = 0; tap < 9; ++tap)
                for (int i = 0; i < mr; ++i)
                    k[tap][j * mr + i] = rows[((c0 + j) * 9 + tap) * mr + i];
        alignas(64) float gk[6][3][Q];  // G g
        for (int y = 0; y < 6; ++y)
            for (int b = 0; b < 3; ++b)
#pragma GCC ivdep
                for (int q = 0; q < n; ++q)
                    gk[y][b][q] = g[y][0] * k[b][q] + g[y][1] * k[3 + b][q] + g[y][2] * k[6 + b][q];
        for (int y = 0; y < 6; ++y) {
            for (int l = 0; l < 6; ++l) {
                float* __restrict d = u + (y * 6 + l) * us + c0 * mr;
#pragma GCC ivdep
                for (int q = 0; q < n; ++q)
                    d[q] = gk[y][0][q] * g[l][0] + gk[y][1][q] * g[l][1] + gk[y][2][q] * g[l][2];
            }
        }
    }
}

constexpr WinogradKernels table() {
    return {input, output, weight};
}

}  // namespace
}  // namespace winograd_loops
}  // namespace sd::cpu
