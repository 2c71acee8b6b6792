// Internal interface between src/ops/attention.cpp (validation, packing, threading) and the
// flash-attention block kernels (generic C++ in attention.cpp, AVX2 and AVX-512 in
// cpu/attention_avx2.cpp and cpu/attention_avx512.cpp). Not part of the public API.
//
// The driver hands a kernel one block of up to kBlockRows query rows of one (batch, head) at
// a time, together with that head's keys and values packed so that the kernel's inner loops
// are unit-stride vector loads. With W = AttnKernel::width lanes:
//
//   keys, "keys along the lanes", blocks of W keys:
//     kt[kb][i][l] = k[kb * W + l][i]          (i < D, zero for keys >= Lk)
//   values, one of two layouts (VLayout):
//     ValueLanes: vp[j][c] = v[j][c], rows of Dvp = round_up(Dv, W) floats (zero padded),
//                 row stride vstride (the caller's own v rows when they are already so)
//     KeyLanes:   vt[kb][c][l] = v[kb * W + l][c]   (c < Dv, zero for keys >= Lk)
//
// The kernel body (a template over an ISA's vector traits) lives below under
// SD_ATTENTION_KERNEL_BODY, inside an anonymous namespace so that each translation unit,
// compiled with its own instruction-set flags, gets a private copy (no ODR clash between the
// AVX2 and AVX-512 instantiations). Its tiling is described there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/attention.h"

namespace sd::attn {

// Query rows per tile (the rows of one microkernel pass).
constexpr int kTileRows = 8;
// Tiles per block: a block's tiles all walk the same key tile while it is hot in L1/L2, so
// the head's K and V stream from L3/memory once per block instead of once per tile.
constexpr int kMaxTiles = 4;
constexpr int kBlockRows = kTileRows * kMaxTiles;
// Keys per key tile (a multiple of every kernel's width).
constexpr int kKeyTile = 512;
// Floats between rows of the score tile S: the key tile plus a pad, so that the rows do not
// sit a multiple of 4 KiB apart (L1 set conflicts, false store-to-load dependences).
constexpr int kSRow = kKeyTile + 16;
// Every scratch pointer is aligned to this many bytes.
constexpr size_t kAlign = 64;

enum class VLayout { ValueLanes, KeyLanes };

struct BlockArgs {
    // [round_up(rows, kTileRows)][d] query rows, pre-multiplied by scale * log2(e) so that
    // the softmax can use exp2. Rows >= `rows` are padding (zeros); their results are dropped.
    const float* q = nullptr;
    int rows = 0;  // 1..kBlockRows
    const float* kt = nullptr;
    const float* v = nullptr;  // packed values in `layout`
    VLayout layout = VLayout::ValueLanes;
    int64_t vstride = 0;  // ValueLanes: floats between value rows
    int d = 0;
    int dv = 0;
    // Per row: Lk contiguous additive mask values in natural-log units (the kernel multiplies
    // them by log2(e)), or null for no mask. Padding rows repeat the last row's entry.
    const float* mask[kBlockRows] = {};
    // Per row: the row sees keys [0, key_end[r]) (the causal limit; Lk otherwise). Padding
    // rows repeat the last row's entry.
    int64_t key_end[kBlockRows] = {};
    // Output row r (dv values) goes to out + r * out_stride.
    float* out = nullptr;
    int64_t out_stride = 0;
    // Scratch of work_floats(layout, dv, width) floats, kAlign-aligned.
    float* work = nullptr;
};

// Floats per row of the O accumulator: Dv rounded up to whole vectors for ValueLanes, a
// W-lane vector per value for KeyLanes.
constexpr int64_t o_row_floats(VLayout layout, int64_t dv, int width) {
    return layout == VLayout::KeyLanes ? dv * width : (dv + width - 1) / width * width;
}

// Scratch floats a kernel of lane width `width` needs for one block: S, O, l, row maxima.
constexpr size_t work_floats(VLayout layout, int64_t dv, int width) {
    return static_cast<size_t>(kTileRows) * kSRow +
           kBlockRows * static_cast<size_t>(o_row_floats(layout, dv, width) + width) +
           static_cast<size_t>(kTileRows) * width + 64;
}

struct AttnKernel {
    int width = 0;  // W
    void (*run_block)(const BlockArgs& args) = nullptr;
};

AttnKernel attention_kernel_generic();
#ifdef SD_X86_KERNELS
AttnKernel attention_kernel_avx2();
AttnKernel attention_kernel_avx512();
#endif

// Which value layout the driver uses: Auto (by cost, the default) or one forced, so that
// tests and benchmarks can run both paths on any shape. Not thread-safe against running ops.
enum class LayoutChoice { Auto, ValueLanes, KeyLanes };
void set_layout_choice(LayoutChoice choice);
LayoutChoice layout_choice();

// Validated sizes of one attention call, shared by the kernel driver and the reference.
struct AttentionDims {
    int64_t batch = 0, heads = 0, lq = 0, lk = 0, d = 0, dv = 0;
    // Element strides of the mask viewed as [B, H, Lq, Lk] (0 where it broadcasts).
    int64_t mask_strides[4] = {0, 0, 0, 0};
    float scale = 0.0f;  // resolved: options.scale, or 1 / sqrt(D) when that is 0
    bool causal = false;
    int64_t causal_offset = 0;  // causal: query i sees keys j <= i + causal_offset
};

// Throws sd::Error naming the shapes when the arguments are not a valid attention call.
AttentionDims check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                              const AttentionOptions& options);

}  // namespace sd::attn

#ifdef SD_ATTENTION_KERNEL_BODY
// ---------------------------------------------------------------------------------------
// The block kernel, a template over vector traits V:
//
//   V::reg                       a vector of V::kWidth floats
//   V::kWidth (W), V::kRows (R), V::kCols (C): microkernel of R rows x C vectors
//   zero, load, store, set1, fma(a, b, c) = a * b + c, add, mul, sub, max,
//   exp2<may_be_inf> (2^x for x <= 0, flushing to 0 below -126; with may_be_inf also for -inf
//     and NaN, without it x must be finite), hsum, hmax,
//   pin(x) (keeps x in a register: stops the compiler re-loading it as a memory operand)
//
// Tiling. A block is up to kMaxTiles = 4 tiles of M = kTileRows = 8 query rows; NK =
// kKeyTile = 512 keys per key tile. Per block:
//
//   for each key tile [k0, k0 + NK) (up to the block's largest causal limit):
//     for each query tile of the block (skipped once past its own causal limit):
//       1. S[M][NK] = Qs . K^T            (Qs = Q * scale * log2 e, so exp becomes exp2)
//          microkernel: R rows x C key vectors (W keys each) of accumulators; per step of
//          the head dim: C loads of packed K, R broadcasts of q, R*C FMAs. It also folds
//          the running row maximum of S when no mask / causal edge touches the tile.
//       2. only where needed: S += mask * log2 e; S = -inf past the causal limit / past Lk.
//       3. online softmax per row: m' = max(m, max_j S), alpha = 2^(m - m'),
//          P = 2^(S - m') written over S, l = l * alpha + sum_j P (kept as W lanes).
//       4. O = O * alpha + P . V_tile, with O in one of two layouts:
//          ValueLanes: O[row][Dvp], Dv along the lanes; microkernel R rows x C value
//            vectors, per key: C loads of V, R broadcasts of P, R*C FMAs. Exact for
//            Dv % W == 0; wastes the padding lanes otherwise.
//          KeyLanes: O[row][Dv] is a W-lane vector of partial sums over the keys in each
//            lane, so P (keys along lanes in S) meets V^T (keys along lanes) in plain
//            vertical FMAs; microkernel R rows x C values, per key vector: R loads of P,
//            C loads of V^T, R*C FMAs. No lanes wasted for any Dv, but each value needs a
//            horizontal sum at the end and O is reloaded once per key tile.
//          The driver picks the cheaper one (ValueLanes whenever Dv % W == 0 or Lk is short).
//   out = O / l (horizontal sums for KeyLanes); 0 where l == 0 (every key masked).
//
// Working set per block: S (M * NK floats, 16.5 KiB with its row pad), O and l of the block's
// rows (6 KiB for Dv = 40), the current key tile of K and V (NK * (D + Dvp) floats, 176 KiB
// for D = 40) re-read by every tile of the block from L2; the head's packed K and V stream
// from L3 / memory once per block. NK = 512 measured 3-5% faster than 192 or 384 on Zen 5
// (fewer per-tile softmax steps and microkernel ramps), although the K/V tile leaves L1.
//
// The exp2 passes overlap with the FMA-bound products: on Zen 5 a build with exp2 replaced by
// the identity ran no faster. What bounds D = 40 is FMA throughput, including the 8 padding
// lanes of Dvp = 48 in P . V.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace sd::attn {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Coefficients of p(f) ~ 2^f on [-0.5, 0.5], a relative-error minimax fit of degree 6
// (fit error 2.0e-9; degree 5 would be 9e-8). With f = x - round(x) exact and 2^round(x)
// applied exactly, exp2 in float (Horner with FMAs) is within 0.96 ulp of the true 2^x over
// [-126, 0]: measured against double exp2 on every float in [-2, 0] and one in seven in
// [-126, -2). Below -126 it flushes to 0 (AVX-512: below about -149, through denormals),
// which moves no softmax weight by more than 2^-126 of the row's largest.
constexpr float kExp2C6 = 1.535336384e-04f;
constexpr float kExp2C5 = 1.339887510e-03f;
constexpr float kExp2C4 = 9.618437357e-03f;
constexpr float kExp2C3 = 5.550332469e-02f;
constexpr float kExp2C2 = 2.402264791e-01f;
constexpr float kExp2C1 = 6.931472029e-01f;

// Scalar 2^x for x <= 0 with the same polynomial (0 below -126 and for -inf, NaN): the
// softmax's per-row rescale factor, without a libm call.
inline float exp2_scalar(float x) {
    if (!(x >= -126.0f)) return 0.0f;
    if (x > 0.0f) x = 0.0f;
    const int ni = -static_cast<int>(0.5f - x);  // round(x): truncation of the positive 0.5 - x
    const float f = x - static_cast<float>(ni);
    float p = kExp2C6;
    p = p * f + kExp2C5;
    p = p * f + kExp2C4;
    p = p * f + kExp2C3;
    p = p * f + kExp2C2;
    p = p * f + kExp2C1;
    p = p * f + 1.0f;
    return std::bit_cast<float>(std::bit_cast<int32_t>(p) + ni * (int32_t{1} << 23));
}

// Splits n vectors into chunks of at most C, as even as possible (10 -> 3, 3, 2, 2), and
// calls f.template operator()<size>(offset) for each: no chunk of 1 unless n is 1 or C is.
template <int C, class F>
inline void for_chunks(int n, F&& f) {
    if (n <= 0) return;
    const int chunks = (n + C - 1) / C;
    const int base = n / chunks, extra = n % chunks;
    int off = 0;
    for (int i = 0; i < chunks; ++i) {
        const int size = base + (i < extra ? 1 : 0);
        if constexpr (C >= 3) {
            if (size == 3) f.template operator()<3>(off);
        }
        if constexpr (C >= 2) {
            if (size == 2) f.template operator()<2>(off);
        }
        if (size == 1) f.template operator()<1>(off);
        off += size;
    }
    static_assert(C >= 1 && C <= 3, "chunk sizes 1..3");
}

// S[R rows][CC vectors] = q . kt; rowmax (if non-null) = max(rowmax, S) per row, W lanes.
template <class V, int CC>
inline void qk_block(const float* q, int d, const float* kt, float* s, float* rowmax) {
    using reg = typename V::reg;
    constexpr int W = V::kWidth, R = V::kRows;
    reg acc[R][CC];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int c = 0; c < CC; ++c) acc[r][c] = V::zero();
    const int64_t kstride = static_cast<int64_t>(d) * W;
    for (int i = 0; i < d; ++i) {
        reg kk[CC];
#pragma GCC unroll 16
        for (int c = 0; c < CC; ++c) kk[c] = V::load(kt + c * kstride + i * W);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const reg b = V::set1(q[r * d + i]);
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) acc[r][c] = V::fma(b, kk[c], acc[r][c]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (int c = 0; c < CC; ++c) V::store(s + r * kSRow + c * W, acc[r][c]);
    }
    if (rowmax) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            reg mx = V::load(rowmax + r * W);
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) mx = V::max(mx, acc[r][c]);
            V::store(rowmax + r * W, mx);
        }
    }
}

// S[M][first nv * W columns] = q . kt for one tile.
template <class V>
inline void qk_tile(const float* q, int d, const float* kt, int nv, float* s, float* rowmax) {
    constexpr int W = V::kWidth, R = V::kRows, C = V::kCols;
    static_assert(kTileRows % R == 0, "row block must divide the tile");
    for (int r0 = 0; r0 < kTileRows; r0 += R) {
        const float* qr = q + r0 * d;
        float* sr = s + r0 * kSRow;
        float* mr = rowmax ? rowmax + r0 * W : nullptr;
        for_chunks<C>(nv, [&]<int CC>(int kv) {
            qk_block<V, CC>(qr, d, kt + static_cast<int64_t>(kv) * d * W, sr + kv * W, mr);
        });
    }
}

// ValueLanes: O[R rows][CC vectors of Dv] = O * alpha + P[R][nk] . V[nk][CC vectors].
template <class V, int CC>
inline void pv_block_vl(const float* p, int nk, const float* v, int64_t vstride, float* o,
                        int64_t ostride, const float* alpha, bool first) {
    using reg = typename V::reg;
    constexpr int W = V::kWidth, R = V::kRows;
    reg acc[R][CC];
    if (first) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) acc[r][c] = V::zero();
    } else {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const reg a = V::set1(alpha[r]);
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) acc[r][c] = V::mul(V::load(o + r * ostride + c * W), a);
        }
    }
    for (int j = 0; j < nk; ++j) {
        reg vv[CC];
#pragma GCC unroll 16
        for (int c = 0; c < CC; ++c) vv[c] = V::load(v + j * vstride + c * W);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const reg b = V::set1(p[r * kSRow + j]);
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) acc[r][c] = V::fma(b, vv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int c = 0; c < CC; ++c) V::store(o + r * ostride + c * W, acc[r][c]);
}

// KeyLanes: O[R rows][CC values] (W lanes each) = O * alpha + P[R][nv] . Vt[nv][CC].
template <class V, int CC>
inline void pv_block_kl(const float* p, int nv, const float* vt, int dv, float* o,
                        const float* alpha, bool first) {
    using reg = typename V::reg;
    constexpr int W = V::kWidth, R = V::kRows;
    const int64_t ostride = static_cast<int64_t>(dv) * W;  // between rows of O
    const int64_t vstride = static_cast<int64_t>(dv) * W;  // between key blocks of vt
    reg acc[R][CC];
    if (first) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) acc[r][c] = V::zero();
    } else {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const reg a = V::set1(alpha[r]);
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) acc[r][c] = V::mul(V::load(o + r * ostride + c * W), a);
        }
    }
    for (int kv = 0; kv < nv; ++kv) {
        reg vv[CC];
#pragma GCC unroll 16
        for (int c = 0; c < CC; ++c) vv[c] = V::load(vt + kv * vstride + c * W);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            reg pr = V::load(p + r * kSRow + kv * W);
            V::pin(pr);  // one load per row, not one per FMA
#pragma GCC unroll 16
            for (int c = 0; c < CC; ++c) acc[r][c] = V::fma(pr, vv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int c = 0; c < CC; ++c) V::store(o + r * ostride + c * W, acc[r][c]);
}

// One tile's P . V into its O rows.
template <class V>
inline void pv_tile(const BlockArgs& a, const float* p, int64_t k0, int nk, float* o,
                    const float* alpha, bool first) {
    constexpr int W = V::kWidth, R = V::kRows, C = V::kCols;
    const int dv = a.dv;
    if (a.layout == VLayout::ValueLanes) {
        const int nvec = (dv + W - 1) / W;
        const int64_t ostride = static_cast<int64_t>(nvec) * W;
        const float* v = a.v + k0 * a.vstride;
        for (int r0 = 0; r0 < kTileRows; r0 += R) {
            for_chunks<C>(nvec, [&]<int CC>(int c0) {
                pv_block_vl<V, CC>(p + r0 * kSRow, nk, v + c0 * W, a.vstride,
                                   o + r0 * ostride + c0 * W, ostride, alpha + r0, first);
            });
        }
    } else {
        const int nv = (nk + W - 1) / W;
        const float* vt = a.v + (k0 / W) * dv * W;
        for (int r0 = 0; r0 < kTileRows; r0 += R) {
            for_chunks<C>(dv, [&]<int CC>(int c0) {
                pv_block_kl<V, CC>(p + r0 * kSRow, nv, vt + c0 * W, dv,
                                   o + static_cast<int64_t>(r0) * dv * W + c0 * W, alpha + r0,
                                   first);
            });
        }
    }
}

template <class V>
void run_block(const BlockArgs& a) {
    using reg = typename V::reg;
    constexpr int W = V::kWidth;
    constexpr int M = kTileRows;
    static_assert(kKeyTile % W == 0, "key tile must be whole vectors");
    const int d = a.d, dv = a.dv;
    const bool key_lanes = a.layout == VLayout::KeyLanes;
    const int64_t orow = o_row_floats(a.layout, dv, W);
    const int ntiles = (a.rows + M - 1) / M;

    float* S = a.work;                   // [M][kSRow]
    float* O = S + M * kSRow;            // [kBlockRows][orow]
    float* L = O + kBlockRows * orow;    // [kBlockRows][W]
    float* rowmax = L + kBlockRows * W;  // [M][W]
    float m[kBlockRows];
    alignas(64) float alpha[M];

    int64_t tile_end[kMaxTiles] = {};  // keys each tile needs: its rows' largest limit
    int64_t kend = 0;
    for (int t = 0; t < ntiles; ++t) {
        for (int r = t * M; r < t * M + M; ++r) tile_end[t] = std::max(tile_end[t], a.key_end[r]);
        kend = std::max(kend, tile_end[t]);
    }
    for (int r = 0; r < ntiles * M; ++r) m[r] = kNegInf;

    for (int64_t k0 = 0; k0 < kend; k0 += kKeyTile) {
        const bool first = k0 == 0;
        const float* kt = a.kt + (k0 / W) * d * W;
        for (int t = 0; t < ntiles; ++t) {
            if (k0 >= tile_end[t]) continue;
            const int rb = t * M;  // first row of the tile in the block
            const int nk = static_cast<int>(std::min<int64_t>(kKeyTile, tile_end[t] - k0));
            const int nv = (nk + W - 1) / W;

            // Does a mask, a causal edge or the end of the keys touch this tile?
            bool edge = false;
            for (int r = rb; r < rb + M; ++r) {
                if (a.mask[r] != nullptr || a.key_end[r] - k0 < nv * W) edge = true;
            }
            if (!edge) {
                for (int r = 0; r < M; ++r) V::store(rowmax + r * W, V::set1(kNegInf));
            }
            qk_tile<V>(a.q + rb * d, d, kt, nv, S, edge ? nullptr : rowmax);

            if (edge) {
                for (int r = 0; r < M; ++r) {
                    float* s = S + r * kSRow;
                    if (const float* mk = a.mask[rb + r]) {
                        mk += k0;
                        const reg l2e = V::set1(kLog2e);
                        int j = 0;
                        for (; j + W <= nk; j += W) {
                            V::store(s + j, V::fma(V::loadu(mk + j), l2e, V::load(s + j)));
                        }
                        for (; j < nk; ++j) s[j] += mk[j] * kLog2e;
                    }
                    const int lim =
                        static_cast<int>(std::clamp<int64_t>(a.key_end[rb + r] - k0, 0, nk));
                    for (int j = lim; j < nv * W; ++j) s[j] = kNegInf;
                    reg mx = V::load(s);
                    for (int kv = 1; kv < nv; ++kv) mx = V::max(mx, V::load(s + kv * W));
                    V::store(rowmax + r * W, mx);
                }
            }

            // Online softmax.
            for (int r = 0; r < M; ++r) {
                float* s = S + r * kSRow;
                float& mr = m[rb + r];
                const float mnew = std::max(mr, V::hmax(V::load(rowmax + r * W)));
                const float muse = mnew == kNegInf ? 0.0f : mnew;
                alpha[r] = first ? 0.0f : exp2_scalar(mr - muse);
                mr = mnew;
                const reg mu = V::set1(muse);
                reg sum = V::zero();
                if (edge) {  // S may hold -inf
                    for (int kv = 0; kv < nv; ++kv) {
                        const reg p = V::template exp2<true>(V::sub(V::load(s + kv * W), mu));
                        V::store(s + kv * W, p);
                        sum = V::add(sum, p);
                    }
                } else {
                    for (int kv = 0; kv < nv; ++kv) {
                        const reg p = V::template exp2<false>(V::sub(V::load(s + kv * W), mu));
                        V::store(s + kv * W, p);
                        sum = V::add(sum, p);
                    }
                }
                float* l = L + (rb + r) * W;
                V::store(l, first ? sum : V::fma(V::load(l), V::set1(alpha[r]), sum));
            }

            pv_tile<V>(a, S, k0, nk, O + rb * orow, alpha, first);
        }
    }

    for (int r = 0; r < a.rows; ++r) {
        float* out = a.out + r * a.out_stride;
        const float l = tile_end[r / M] == 0 ? 0.0f : V::hsum(V::load(L + r * W));
        if (!(l > 0.0f)) {
            for (int c = 0; c < dv; ++c) out[c] = 0.0f;
            continue;
        }
        const float inv = 1.0f / l;
        const float* o = O + r * orow;
        if (key_lanes) {
            for (int c = 0; c < dv; ++c) out[c] = V::hsum(V::load(o + c * W)) * inv;
        } else {
            for (int c = 0; c < dv; ++c) out[c] = o[c] * inv;
        }
    }
}

}  // namespace
}  // namespace sd::attn
#endif  // SD_ATTENTION_KERNEL_BODY
