// conv2d without patch packing, for convolutions with few output channels (ESRGAN's dense
// blocks: 64..192 -> 32 or 64; TAESD: 64 -> 64; 1..4 channel heads), stride 1.
//
// Blocking scheme. The im2col path (conv.cpp) packs a 64-pixel patch panel of C*KH*KW
// rows for every task and multiplies it by all O rows of the weight: with O = 32 the panel
// is used for only 32 rows, and packing took 20-35% of the time. Here nothing is packed
// per tile:
//   - The input is seen as a zero-bordered image P[c][y][x] (Hp = H + 2 ph rows of
//     Wp = W + 2 pw values, upsampled 2x first where asked), so output pixel (oh, ow) under
//     tap (c, kh, kw) reads P[c][oh + kh][ow + kw], no edge test. A task is a band of
//     output rows with its rows of P (rows + KH - 1 of each channel) in a per-thread
//     buffer, each row of P copied just before the first output row that needs it.
//   - The weight [O, K = C*KH*KW] is packed once per call into the GEMM's A panels (MR
//     output channels each, a[k * MR + i], f16/bf16 converted to f32).
//   - The register tile is MR output channels x NR consecutive pixels of one output row
//     (6 x 64 on AVX-512, 6 x 16 on AVX2): the GEMM microkernel itself (offset_kernel),
//     whose B vectors for step k = (c, kh, kw) are loaded unaligned straight from P at
//     the band at (oh - band start) * Wp + ow0 + off[k], off[k] = (c * Hb + kh) * Wp + kw
//     with Hb the band's rows of P. A row's last tile is
//     partial (masked stores; the loads run past it into the next row or the buffer's slack).
//   - k is blocked by whole channels: a block's tile rows (KH rows of NR + KW - 1 values
//     per channel, kTileBytes in all: 16 channels of a 3x3 on AVX-512) stay in L1 while
//     every panel of output channels runs that block over them, accumulating into C in
//     place (the first block stores with the bias, the last adds a residual and applies
//     LeakyReLU in the kernel's store: a residual block's skip and activation cost no pass).
//   - While a row's tiles run, the input rows the next output row needs are prefetched
//     into L2, a share per tile: the copy into P otherwise waits on memory (a 64-channel
//     row's 64 rows lie a plane apart), ~10% of TAESD's time at 512x512. The packed weight (O x K:
//     440 KiB at 64 x 1728) stays in L2 across tiles.
// Wider layers (O > kDirectMaxOut) stay on the im2col path, whose patch panel is amortised
// over many rows of A and whose blocking keeps the weight's k blocks in L2.
#include "ops/conv_direct.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/gemm.h"
#include "ops/kernel_scratch.h"

namespace sd::conv_detail {
namespace {

constexpr int64_t kDirectMaxOut = 64;
constexpr int64_t kBandBytes = int64_t{8} << 20;
constexpr int64_t kTileBytes = 16 << 10;

struct Direct {
    const cpu::GemmKernels& ks;
    int64_t c, h, w;   // the stored input (before upsampling)
    int64_t hp, wp;    // the padded (and upsampled) image P
    int64_t rows, hb;  // output rows per band, rows of P per band (rows + KH - 1)
    int64_t o, k;      // output channels, C * KH * KW
    int64_t kb;        // k steps per block: whole channels whose tile rows fit kTileBytes
    int64_t oh, ow;    // output size
    int64_t ph, pw;
    bool up2;
    const float* a;      // packed weight panels
    const int32_t* off;  // off[k] of the tap k = (c, kh, kw)
    const float* bias;   // null or [o]
    const Conv2dOptions& opt;
};

// Rows [y0, y1) of P for one image x into the band that starts at row b0:
// p[(c * hb + y - b0) * wp], zero-bordered (and upsampled 2x with up2).
void pad_rows(const Direct& d, const float* x, int64_t y0, int64_t y1, int64_t b0, float* p) {
    const int64_t ih = d.up2 ? 2 * d.h : d.h, iw = d.up2 ? 2 * d.w : d.w;
    for (int64_t c = 0; c < d.c; ++c) {
        for (int64_t y = y0; y < y1; ++y) {
            float* row = p + (c * d.hb + y - b0) * d.wp;
            const int64_t sy = y - d.ph;
            if (sy < 0 || sy >= ih) {
                std::memset(row, 0, static_cast<size_t>(d.wp) * sizeof(float));
            } else if (d.up2) {
                copy_upsampled(x + (c * d.h + sy / 2) * d.w, d.w, -d.pw, row, d.wp);
            } else {
                d.ks.copy_padded(x + (c * d.h + sy) * d.w, iw, -d.pw, 1, row, d.wp);
            }
        }
    }
}

// One pixel tile (t.b, t.nr set) for every output channel: k blocks of kb steps outer, so
// their input rows stay in L1 while every panel of output channels reads them. r: the
// residual at the tile (laid out as c) or null.
void run_tile(const Direct& d, cpu::GemmTile& t, float* c, const float* r) {
    const int MR = d.ks.mr;
    const int64_t plane = d.oh * d.ow;
    for (int64_t k0 = 0; k0 < d.k; k0 += d.kb) {
        t.kc = std::min(d.kb, d.k - k0);
        t.b_offsets = d.off + k0;
        t.first = k0 == 0;
        const bool last = k0 + t.kc == d.k;
        t.leaky = d.opt.leaky_relu && last;
        t.leaky_slope = d.opt.negative_slope;
        for (int64_t m0 = 0; m0 < d.o; m0 += MR) {
            t.mr = static_cast<int>(std::min<int64_t>(MR, d.o - m0));
            t.a = d.a + m0 * d.k + k0 * MR;
            t.c = c + m0 * plane;
            t.bias_m = d.bias ? d.bias + m0 : nullptr;
            t.add = last && r ? r + m0 * plane : nullptr;
            d.ks.offset_kernel(t);
        }
    }
}

// Part `part` of `parts` of the input rows behind row y of P (channels split evenly) into L2.
// Always inlined: GCC finds a function of prefetches alone "pure" and drops its calls.
[[gnu::always_inline]] inline void prefetch_rows(const Direct& d, const float* x, int64_t y,
                                                 int64_t part, int64_t parts) {
    const int64_t ih = d.up2 ? 2 * d.h : d.h, sy = y - d.ph;
    if (sy < 0 || sy >= ih) return;
    const float* row = x + (d.up2 ? sy / 2 : sy) * d.w;
    const int64_t c0 = d.c * part / parts, c1 = d.c * (part + 1) / parts;
    for (int64_t c = c0; c < c1; ++c) {
        const char* p = reinterpret_cast<const char*>(row + c * d.h * d.w);
        for (int64_t b = 0; b < d.w * int64_t{sizeof(float)}; b += 64)
            __builtin_prefetch(p + b, 0, 2);
    }
}

// Output rows [y0, y1) of one image x (a band), tile by tile of NR pixels, into out (res:
// the residual, laid out as out, or null). The band's rows of P are copied into p as they
// are needed: the first KH - 1, then one more before each output row, so each is read from
// L1/L2 just after it was written.
void run_band(const Direct& d, const float* x, float* p, float* out, const float* res, int64_t y0,
              int64_t y1) {
    const int NR = d.ks.nr;
    const int64_t halo = d.hb - d.rows;  // KH - 1
    cpu::GemmTile t;
    t.a_row = 1;
    t.a_step = d.ks.mr;
    t.ldc = d.oh * d.ow;
    const int64_t tiles = (d.ow + NR - 1) / NR;
    pad_rows(d, x, y0, y0 + halo, y0, p);
    for (int64_t y = y0; y < y1; ++y) {
        pad_rows(d, x, y + halo, y + halo + 1, y0, p);
        for (int64_t i = 0; i < tiles; ++i) {
            if (y + 1 < y1) prefetch_rows(d, x, y + 1 + halo, i, tiles);
            const int64_t x0 = i * NR, at = y * d.ow + x0;
            t.b = p + (y - y0) * d.wp + x0;
            t.nr = static_cast<int>(std::min<int64_t>(NR, d.ow - x0));
            run_tile(d, t, out + at, res ? res + at : nullptr);
        }
    }
}

// Output rows per band: about four bands per thread, fewer where P's band would pass
// kBandBytes (the per-thread buffer). The KH - 1 rows a band shares with the next are
// copied twice, so bands are not cut smaller than that.
int64_t band_rows(int64_t c, int64_t kh, int64_t wp, int64_t oh, int threads) {
    const int64_t fit = kBandBytes / (c * wp * int64_t{sizeof(float)}) - (kh - 1);
    const int64_t balanced = (oh + 4 * int64_t{threads} - 1) / (4 * int64_t{threads});
    return std::max<int64_t>(1, std::min(fit, balanced));
}

// The weight [o, k] as MR-row panels a[p * MR * k + k * MR + i] (rows past o zero).
std::vector<float> pack_weight(const cpu::GemmKernels& ks, const Tensor& w, int64_t o, int64_t k) {
    const int MR = ks.mr;
    const int64_t panels = (o + MR - 1) / MR;
    std::vector<float> a(static_cast<size_t>(panels * MR * k));
    const auto* base = static_cast<const uint8_t*>(w.data_ptr());
    const int64_t elem = static_cast<int64_t>(dtype_info(w.dtype()).type_size);
    for (int64_t p = 0; p < panels; ++p) {
        const int rows = static_cast<int>(std::min<int64_t>(MR, o - p * MR));
        ks.pack_rows(w.dtype(), base + p * MR * k * elem, k, rows, k, a.data() + p * MR * k, MR);
    }
    return a;
}

}  // namespace

void copy_upsampled(const float* row, int64_t w, int64_t iw0, float* d, int64_t n) {
    int64_t t = 0;
    const int64_t begin = std::min(n, std::max<int64_t>(0, -iw0));
    const int64_t end = std::max(begin, std::min(n, 2 * w - iw0));
    for (; t < begin; ++t) d[t] = 0.0f;
    if (t < end && ((iw0 + t) & 1)) {
        d[t] = row[(iw0 + t) >> 1];
        ++t;
    }
    const float* r = row + ((iw0 + t) >> 1);
    const int64_t pairs = (end - t) / 2;
    float* out = d + t;
    for (int64_t j = 0; j < pairs; ++j) {  // each source value twice
        out[2 * j] = r[j];
        out[2 * j + 1] = r[j];
    }
    t += 2 * pairs;
    if (t < end) {
        d[t] = row[(iw0 + t) >> 1];
        ++t;
    }
    for (; t < n; ++t) d[t] = 0.0f;
}

bool direct_applies(const Tensor& x, const Tensor& weight, const Conv2dOptions& opt) {
    const DType wt = weight.dtype();
    const cpu::GemmKernels& ks = cpu::active_gemm_kernels(wt);
    if (!ks.offset_kernel || opt.stride_h != 1 || opt.stride_w != 1) return false;
    if (wt != DType::F32 && wt != DType::F16 && wt != DType::BF16) return false;
    const int64_t up = opt.upsample2x ? 2 : 1, kh = weight.size(2), kw = weight.size(3);
    const int64_t hp = x.size(2) * up + 2 * opt.pad_h, wp = x.size(3) * up + 2 * opt.pad_w;
    const int64_t ow = wp - kw + 1;
    // Rows narrower than half a tile would waste most of each tile.
    if (kh * kw == 1 || weight.size(0) > kDirectMaxOut || ow < ks.nr / 2) return false;
    return x.size(1) * hp * wp + ks.nr < std::numeric_limits<int32_t>::max();
}

void conv2d_direct(const Tensor& x, const Tensor& weight, const float* bias,
                   const Conv2dOptions& opt, float* out, const float* residual) {
    const cpu::GemmKernels& ks = cpu::active_gemm_kernels(weight.dtype());
    const int64_t up = opt.upsample2x ? 2 : 1, c = x.size(1), h = x.size(2), w = x.size(3);
    const int64_t kh = weight.size(2), kw = weight.size(3), o = weight.size(0), k = c * kh * kw;
    const int64_t hp = h * up + 2 * opt.pad_h, wp = w * up + 2 * opt.pad_w;
    const int64_t oh = hp - kh + 1, ow = wp - kw + 1;
    const int64_t rows = band_rows(c, kh, wp, oh, num_threads()), hb = rows + kh - 1;
    const std::vector<float> a = pack_weight(ks, weight, o, k);
    std::vector<int32_t> off(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) {
        off[i] = static_cast<int32_t>((i / (kh * kw) * hb + i / kw % kh) * wp + i % kw);
    }
    const int64_t tile_row_bytes = (ks.nr + kw - 1 + 16) * int64_t{sizeof(float)};
    const int64_t kb = std::max<int64_t>(1, kTileBytes / (kh * tile_row_bytes)) * kh * kw;
    const Direct d{
        ks, c,  h,         w,         hp,      wp,       rows,       hb,   o,  k, std::min(kb, k),
        oh, ow, opt.pad_h, opt.pad_w, up == 2, a.data(), off.data(), bias, opt};
    // Slack past the band for the loads of its last row's partial tiles (read, never used).
    const size_t band = static_cast<size_t>(c * hb * wp), slack = static_cast<size_t>(ks.nr + kw);
    const int64_t bands = (oh + rows - 1) / rows;
    for (int64_t b = 0; b < x.size(0); ++b) {
        const float* xb = x.data<float>() + b * c * h * w;
        float* ob = out + b * o * oh * ow;
        const float* rb = residual ? residual + b * o * oh * ow : nullptr;
        parallel_for(bands, 1, [&](int64_t b0, int64_t b1) {
            const ScratchLease lease(ScratchSlot::ConvBand, band + slack, /*zero_grown=*/true);
            float* p = lease.data();
            for (int64_t i = b0; i < b1; ++i) {
                run_band(d, xb, p, ob, rb, i * rows, std::min(oh, (i + 1) * rows));
            }
        });
    }
}

}  // namespace sd::conv_detail

namespace sd {

// Per thread: the band of P (band_rows' rows plus the KH - 1 shared with the next, c channels
// of wp values) and the slack after it, in ScratchSlot::ConvBand. Per call: the packed weight
// (at most kDirectMaxOut rows, rounded up to the register tile) and the tap offsets.
ScratchBound conv_direct_scratch_bound(int64_t c, int64_t kh, int64_t kw, int64_t wp, int64_t oh,
                                       int threads) {
    using namespace conv_detail;
    ScratchBound bound;
    for (const cpu::GemmKernels* ks :
         {&cpu::active_gemm_kernels(DType::F32), &cpu::active_gemm_kernels(DType::BF16)}) {
        if (!ks->offset_kernel) continue;
        const int64_t hb = band_rows(c, kh, wp, oh, std::max(threads, 1)) + kh - 1;
        const int64_t k = c * kh * kw;
        const int64_t out_rows = (kDirectMaxOut + ks->mr - 1) / ks->mr * ks->mr;
        ScratchBound one;
        one.per_thread = static_cast<double>(
            scratch_buffer_bytes(static_cast<size_t>(c * hb * wp + ks->nr + kw)));
        one.per_call = static_cast<double>(out_rows * k * 4 + k * 4);
        bound.max_with(one);
    }
    return bound;
}

}  // namespace sd
