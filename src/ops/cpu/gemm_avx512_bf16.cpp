// AVX512-BF16 GEMM microkernel and packers: the kernels of ComputeType::BF16
// (ops/compute_type.h), compiled with the AVX-512 flags plus -mavx512bf16.
//
// vdpbf16ps (_mm512_dpbf16_ps) adds to each f32 lane of the accumulator the two products of
// the bf16 pair in that lane of its operands: acc[j] += a[2j] * b[2j] + a[2j+1] * b[2j+1].
// The products are exact in f32 and the sums are rounded to f32, so one instruction does
// 32 multiply-adds where an FMA does 16; a k step of the f32 kernel becomes a step over a
// pair of k values, and the operands take half the bytes.
//
// Register tile: the f32 kernel's 6 x 64 (gemm_avx512_tile.h), 24 zmm accumulators; per
// pair of k, 4 vector loads of the B panel, 6 broadcasts of an A pair (32 bits) and 24
// vdpbf16ps. The 24 independent chains cover the instruction's latency at two a cycle, and
// the loads stay under two a cycle, so the loop runs at the dot-product peak from L1/L2
// (about 1.85x the f32 FMA peak on Zen 5). The cache blocks of gemm.cpp keep their bytes,
// so a k block holds twice the values (up to 2048): half as many passes over C.
//
// Packed layouts (32-bit words, the driver's float units): for each pair p of k values, the
// panel's R rows, each a word of two bf16 (low half k = 2p, high half k = 2p + 1):
// A panel a[p * 6 + i], B panel b[p * 64 + j]. An odd k count ends with a pair whose high
// half is 0 in both operands; rows past the end of the operand are 0. A is never read in
// place (the driver packs it even when it is f32 with contiguous rows).
//
// Rounding: both operands are rounded to bf16 while packing, to nearest even
// (vcvtne2ps2bf16; f16 and block-quant values through their exact f32 value); bf16 weights
// are copied as they are. Denormal inputs count as 0 (the instructions' DAZ, checked on
// Zen 5). Accumulation is f32 throughout, and the epilogue (bias, first block /
// accumulate) is the f32 kernel's.
//
// Packing: rows contiguous in k (weights, activations) are read 32 k at a time per row,
// rounded into 16 pairs, and 16 rows are transposed in registers as 32-bit lanes; rows with
// the row index contiguous (pack_cols: 1x1 convolutions, and the f32 panels of gathering
// packers such as conv2d's, which the driver converts) are rounded two k rows at a time and
// interleaved with one word permute. The zero-padded row copies and the dot products for
// very few rows of A are the f32 kernels' (gemm_avx512.cpp).
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_avx512_tile.h"

namespace sd::cpu {
namespace {

inline __m512bh as_bf16(__m512 v) {
    return reinterpret_cast<__m512bh>(v);
}

// The tile kernel for M rows of A and NV vectors of B (M <= 6, NV <= 4).
template <int M, int NV>
struct Bf16Tile {
    static void run(const GemmTile& t) {
        const int64_t pairs = (t.kc + 1) / 2, a_step = t.a_step;
        const float* b = t.b;
        const float* a_rows[M];
        __m512 acc[M][NV];
        start_tile<M, NV>(t, a_rows, acc);
#pragma GCC unroll 2
        for (int64_t p = 0; p < pairs; ++p) {
            __m512bh bv[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)
                bv[v] = as_bf16(_mm512_load_ps(b + p * kTileCols + 16 * v));
#pragma GCC unroll 8
            for (int i = 0; i < M; ++i) {
                // The pair's 32 bits broadcast as they are (a move, no arithmetic).
                const __m512bh av = as_bf16(_mm512_set1_ps(a_rows[i][p * a_step]));
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
            }
        }
        store_tile<M, NV>(t, acc);
    }
};

void kernel(const GemmTile& t) {
    run_tile<Bf16Tile>(t);
}

// ---- packing ----

// 32 values of a row (the first kw, 0 after) as 16 bf16 pairs in k order.
template <DType D>
inline __m512 load_pairs(const void* p, int kw) {
    if constexpr (D == DType::BF16) {
        const __mmask32 mask = kw >= 32 ? ~__mmask32{0} : (__mmask32{1} << kw) - 1;
        return _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, p));
    } else {
        __m512 lo, hi;
        if constexpr (D == DType::F32) {
            const float* f = static_cast<const float*>(p);
            lo = _mm512_maskz_loadu_ps(lane_mask(kw), f);
            hi = _mm512_maskz_loadu_ps(lane_mask(kw - 16), f + 16);
        } else {
            const uint16_t* h = static_cast<const uint16_t*>(p);
            lo = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lane_mask(kw), h));
            hi = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lane_mask(kw - 16), h + 16));
        }
        // Words 0-15 from lo, 16-31 from hi: k order.
        return reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(hi, lo));
    }
}

template <DType D>
void pack_rows_typed(const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    using Elem = std::conditional_t<D == DType::F32, float, uint16_t>;
    const Elem* s = static_cast<const Elem*>(src);
    const int64_t pairs = (kc + 1) / 2;
    for (int g = 0; g * 16 < R; ++g) {
        const int rows = std::min(16, nr_valid - 16 * g);
        const __mmask16 lanes = lane_mask(R - 16 * g);
        float* d = dst + 16 * g;
        if (rows <= 0) {
            for (int64_t p = 0; p < pairs; ++p)
                _mm512_mask_storeu_ps(d + p * R, lanes, _mm512_setzero_ps());
            continue;
        }
        const Elem* sg = s + 16 * g * ld;
        for (int64_t k0 = 0; k0 < kc; k0 += 32) {
            const int kw = static_cast<int>(std::min<int64_t>(32, kc - k0));
            __m512 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) {
                r[i] = i < rows ? load_pairs<D>(sg + i * ld + k0, kw) : _mm512_setzero_ps();
            }
            transpose16(r);
            float* dk = d + k0 / 2 * R;
            if (kw == 32) {
#pragma GCC unroll 16
                for (int t = 0; t < 16; ++t) _mm512_mask_storeu_ps(dk + t * R, lanes, r[t]);
            } else {
                for (int t = 0; t < (kw + 1) / 2; ++t)
                    _mm512_mask_storeu_ps(dk + t * R, lanes, r[t]);
            }
        }
    }
}

void pack_rows(DType dtype, const void* src, int64_t ld, int nr_valid, int64_t kc, float* dst,
               int R) {
    auto* typed = dtype == DType::F16    ? pack_rows_typed<DType::F16>
                  : dtype == DType::BF16 ? pack_rows_typed<DType::BF16>
                                         : pack_rows_typed<DType::F32>;
    typed(src, ld, nr_valid, kc, dst, R);
}

void pack_cols(const float* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    // Word j of the result takes bf16 j of the even row and bf16 16 + j of the odd one.
    alignas(64) static constexpr uint16_t kInterleave[32] = {
        0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i interleave = _mm512_load_si512(kInterleave);
    for (int64_t k = 0; k < kc; k += 2) {
        const float* even = src + k * ld;
        const float* odd = k + 1 < kc ? even + ld : nullptr;
        float* d = dst + k / 2 * R;
        for (int i = 0; i < R; i += 16) {
            const __mmask16 valid = lane_mask(nr_valid - i);
            const __m512 e = _mm512_maskz_loadu_ps(valid, even + i);
            const __m512 o = odd ? _mm512_maskz_loadu_ps(valid, odd + i) : _mm512_setzero_ps();
            const __m512i w = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(o, e));
            _mm512_mask_storeu_epi32(d + i, lane_mask(R - i),
                                     _mm512_permutexvar_epi16(interleave, w));
        }
    }
}

}  // namespace

const GemmKernels& gemm_kernels_avx512_bf16() {
    static const GemmKernels kernels = [] {
        GemmKernels k = gemm_kernels_avx512();
        k.kernel = kernel;
        k.pack_rows = pack_rows;
        k.pack_cols = pack_cols;
        k.bf16_pairs = true;
        k.offset_kernel = nullptr;
        return k;
    }();
    return kernels;
}

}  // namespace sd::cpu
