// conv2d by Winograd's minimal filtering F(4x4, 3x3) (Lavin & Gray 2015) for 3x3
// convolutions of stride 1 that ask for it with Conv2dOptions::winograd (TAESD's 64 -> 64
// layers, the AutoencoderKL's 128 .. 512-channel ones): each 4 x 4 block of output pixels
// ("tile") is
//
//     Y = A^T [ (G g G^T) . (B^T d B) ] A
//
// with d the tile's 6 x 6 input window and g a 3 x 3 kernel: 36 products per tile and
// channel pair where the direct form has 144, at the cost of the transforms (O(C + O) per
// tile, against O(C * O) for the products) and of rounding: the transforms' coefficients
// (up to 8 and 1/24) give errors about seven to twenty times those of direct summation,
// growing as the square root of the channels. Measured in f32, C = O, inputs in [-1, 1],
// weights scaled for outputs of standard deviation ~1 (max |y| 2.2 .. 2.9), max error
// against double summation (direct summation's in brackets):
//     64: 1.0e-5 (1.7e-6)   128: 2.0e-5 (2.1e-6)   256: 2.4e-5 (1.7e-6)   512: 4.3e-5 (1.9e-6)
//
// Blocking. Tiles are numbered row-major over the output (a run of them may cross tile
// rows); a chunk is NT tiles (the GEMM kernel's NR, 64 on AVX-512):
//   1. input transform: for each input channel, the 6 rows of the padded (and upsampled)
//      input under the chunk's tiles are copied into a strip and transformed into
//      V[xi][c][t] (xi < 36): each V[xi] is exactly a packed B panel of the GEMM kernel
//      (NR values per k = c);
//   2. for each block of panels of MR output channels, xi by xi, the products M[xi] =
//      U[xi] V[xi] ([MR, C] by [C, NT], all of C in one call) with the GEMM microkernel, U
//      the transformed weight packed once per call into MR-row panels, then
//   3. the output transform of the block's M into those channels' tiles, bias, residual and
//      LeakyReLU included.
// Up to 64 channels V (36 x C x NT: 576 KiB) stays in L2 and a block is one panel; while a
// block's products run, a share of the next chunk's input rows is prefetched. Wider, V
// (4.5 MiB at 512 channels) lives in L3 and is read once a block of kBlockPanels panels,
// V[xi] (C x NT: 128 KiB at 512) from L2 across the block's panels, M (36 x 96 x NT) in
// L2 / L3 until its output transform. The input channels are not split into blocks: a block of C
// would have M accumulated in memory across them, more traffic than reading V again.
// With a few chunks a thread (a 32 x 32 latent at 512 channels is one chunk) the chunks run
// one at a time, the threads splitting its input transform over the input channels and its
// products over the panels (a shared V); else each thread takes whole chunks.
//
// Scratch (ops/kernel_scratch.h): U in the calling thread's WinogradWeight slot, the shared
// V in its WinogradShared slot, each thread's V, M and input strip in its ConvBand slot and
// a weight panel before its transform in its WinogradRows slot; kept from call to call while
// a run lives (winograd_scratch_bound: ~43 MB on the calling thread at 512 -> 512).
// The transformed weight U (36 x O x C, four times the weight) is made on each call, not
// kept: the VAE's 3x3 weights would take ~600 MB as U. At 512 x 512 channels it takes
// ~4.5 ms (2 threads; bound by writing its 38 MB): about half the conv at 32 x 32 (which is
// still 2.7x faster than direct summation), 15% at 64 x 64, under 4% from 128 x 128 on.
// The transforms (cpu/winograd_kernels.h) are vectorised across the chunk's tiles.
#include "ops/conv_winograd.h"

#include <algorithm>
#include <cstring>

#include "base/thread_pool.h"
#include "ops/conv_direct.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/winograd_kernels.h"
#include "ops/kernel_scratch.h"

namespace sd {
namespace cpu {
namespace {
constexpr WinogradKernels kWinogradGeneric = winograd_loops::table();
}  // namespace

const WinogradKernels& winograd_kernels(Isa isa) {
#ifdef SD_X86_KERNELS
    if (isa == Isa::Avx512 && best_supported_isa() == Isa::Avx512) return winograd_kernels_avx512();
    if (isa >= Isa::Avx2 && best_supported_isa() >= Isa::Avx2) return winograd_kernels_avx2();
#endif
    (void)isa;
    return kWinogradGeneric;
}
}  // namespace cpu

namespace conv_detail {
namespace {

constexpr int kTaps = 36;  // 6 x 6 transformed values per tile
// Up to this many input channels V (36 x C x NT) stays in L2 and the products run one panel
// at a time (TAESD's 64 -> 64, as measured for it).
constexpr int64_t kNarrow = 64;
// Wider, the products run a block of this many panels at a time (96 output channels on
// AVX-512: M 36 x 96 x 64 = 864 KiB); V (4.5 MiB at 512 channels) is then read from L3 once
// a block. 8, 16, 32 and all the panels measured within 5% of each other at 128 .. 512
// channels (4 was 10% slower).
constexpr int64_t kBlockPanels = 16;

// The transformed weight as the GEMM's A panels, a[((xi * panels + p) * C + c) * MR + i]
// (rows past O zero), written in place of what `a` held (a buffer kept from call to call: a
// fresh one per call cost more in page faults than the transform itself). In f32: the
// rounding of G's sixths is ~1e-7 of the weight, far below Winograd's own.
void transform_weight(const cpu::GemmKernels& ks, const cpu::WinogradKernels& wk,
                      const Tensor& weight, float* a) {
    const int64_t o = weight.size(0), c = weight.size(1), mr = ks.mr;
    const int64_t panels = (o + mr - 1) / mr, k = c * 9;
    const auto* base = static_cast<const char*>(weight.data_ptr());
    const auto esize = static_cast<int64_t>(dtype_info(weight.dtype()).type_size);
    parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
        const ScratchLease lease(ScratchSlot::WinogradRows, static_cast<size_t>(k * mr), true);
        float* rows = lease.data();
        for (int64_t p = p0; p < p1; ++p) {
            const int valid = static_cast<int>(std::min(mr, o - p * mr));
            ks.pack_rows(weight.dtype(), base + p * mr * k * esize, k, valid, k, rows,
                         static_cast<int>(mr));
            wk.weight(rows, c, static_cast<int>(mr), a + p * c * mr, panels * c * mr);
        }
    });
}

struct Winograd {
    const cpu::GemmKernels& ks;
    const cpu::WinogradKernels& wk;
    int64_t c, h, w;    // the stored input (before upsampling)
    int64_t o, oh, ow;  // output channels and size
    int64_t ph, pw;
    bool up2;
    int64_t tiles_w, tiles;  // tiles per tile row, per image
    int64_t nt, panels;      // tiles per chunk (NR), A panels per xi
    int64_t block;           // panels per block of products (M holds one block)
    const float* u;          // transform_weight
    const float* bias;       // null or [o]
    const Conv2dOptions& opt;
};

// Row y of the padded (upsampled) input of channel ch, columns x0 .. x0 + n, into seg.
void input_row(const Winograd& g, const float* x, int64_t ch, int64_t y, int64_t x0, int64_t n,
               float* seg) {
    const int64_t ih = g.up2 ? 2 * g.h : g.h, sy = y - g.ph;
    if (sy < 0 || sy >= ih) {
        std::memset(seg, 0, static_cast<size_t>(n) * sizeof(float));
    } else if (g.up2) {
        copy_upsampled(x + (ch * g.h + sy / 2) * g.w, g.w, x0 - g.pw, seg, n);
    } else {
        g.ks.copy_padded(x + (ch * g.h + sy) * g.w, g.w, x0 - g.pw, 1, seg, n);
    }
}

// Calls f(ty, tx, n, i) for each run of n tiles of one tile row in tiles [t0, t1) of an
// image, i: the run's first tile's index in the chunk.
template <typename F>
void for_each_run(const Winograd& g, int64_t t0, int64_t t1, F&& f) {
    for (int64_t t = t0; t < t1;) {
        const int64_t ty = t / g.tiles_w, tx = t % g.tiles_w;
        const int64_t n = std::min(t1 - t, g.tiles_w - tx);
        f(ty, tx, static_cast<int>(n), t - t0);
        t += n;
    }
}

// Into L2: part `part` of `parts` of the memory the chunk of tiles [t0, t1) will read, its
// input rows (channels split evenly) and, with res, its residual's rows. Run during the
// previous chunk's products: the rows lie a plane apart (a stream per channel and row, too
// many for the hardware prefetcher), and copying them otherwise waits on memory.
// Always inlined: GCC finds a function of prefetches alone "pure" and drops its calls.
[[gnu::always_inline]] inline void prefetch_chunk(const Winograd& g, const float* x,
                                                  const float* res, int64_t t0, int64_t t1,
                                                  int64_t part, int64_t parts) {
    const int64_t c0 = g.c * part / parts, c1 = g.c * (part + 1) / parts;
    const int64_t o0 = g.o * part / parts, o1 = g.o * (part + 1) / parts;
    const int64_t ih = g.up2 ? 2 * g.h : g.h, up = g.up2 ? 2 : 1;
    for (int64_t t = t0; t < t1;) {  // runs of one tile row, as for_each_run
        const int64_t ty = t / g.tiles_w, tx = t % g.tiles_w, n = std::min(t1 - t, g.tiles_w - tx);
        t += n;
        const int64_t x0 = std::max<int64_t>(0, (4 * tx - g.pw) / up);
        const int64_t bytes = (std::min(g.w, (4 * (tx + n) + 4 - g.pw + up - 1) / up) - x0) * 4;
        for (int r = 0; r < 6; ++r) {
            const int64_t sy = 4 * ty + r - g.ph;
            if (sy < 0 || sy >= ih || (g.up2 && r > 0 && sy % 2 == 1)) continue;
            for (int64_t ch = c0; ch < c1; ++ch) {
                const char* p = reinterpret_cast<const char*>(x + (ch * g.h + sy / up) * g.w + x0);
                for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(p + i, 0, 2);
            }
        }
        if (!res) continue;
        const int64_t rbytes = std::min<int64_t>(4 * n, g.ow - 4 * tx) * 4;
        for (int64_t y = 4 * ty; y < std::min(g.oh, 4 * ty + 4); ++y) {
            for (int64_t oc = o0; oc < o1; ++oc) {
                const char* p =
                    reinterpret_cast<const char*>(res + (oc * g.oh + y) * g.ow + 4 * tx);
                for (int64_t i = 0; i < rbytes; i += 64) __builtin_prefetch(p + i, 0, 2);
            }
        }
    }
}

// The V planes' stride: the 36 planes of V and of M lie a cache line more than a multiple
// of 4 KiB apart, so that the transforms' 36 streams do not fall into the same few L1 sets.
int64_t v_stride(const Winograd& g) {
    return g.c * g.nt + 16;
}
int64_t m_stride(const Winograd& g) {
    return g.block * g.ks.mr * g.nt + 16;
}
constexpr int64_t kStrip = 4 * cpu::kWinogradMaxTiles + 16;  // a row of the input strip

// V[xi][ch][t] of input channels [c0, c1) for tiles [t0, t1) of image x (a chunk, t1 - t0
// <= nt); rows: 6 * kStrip floats of scratch.
void transform_input(const Winograd& g, const float* x, int64_t t0, int64_t t1, int64_t c0,
                     int64_t c1, float* v, float* rows) {
    const float* seg[6];
    for (int r = 0; r < 6; ++r) seg[r] = rows + r * kStrip;
    for_each_run(g, t0, t1, [&](int64_t ty, int64_t tx, int n, int64_t i) {
        for (int64_t ch = c0; ch < c1; ++ch) {
            for (int r = 0; r < 6; ++r)
                input_row(g, x, ch, 4 * ty + r, 4 * tx, 4 * n + 4, rows + r * kStrip);
            g.wk.input(seg, n, v + ch * g.nt + i, v_stride(g));
        }
    });
}

// The products of tiles [t0, t1) of image x (V transformed in v) for output channel panels
// [p0, p1), and their output transform into out (res: the residual laid out as out, or
// null); m: the thread's M. `prefetch`: the next chunk is this thread's next work (its input
// is prefetched during the products).
void run_chunk(const Winograd& g, const float* x, float* out, const float* res, int64_t t0,
               int64_t t1, int64_t p0, int64_t p1, const float* v, bool prefetch, float* m) {
    const int64_t mr = g.ks.mr, vs = v_stride(g), ms = m_stride(g);
    cpu::GemmTile t;
    t.kc = g.c;
    t.a_row = 1;
    t.a_step = mr;
    t.ldc = g.nt;
    t.nr = static_cast<int>(t1 - t0);
    t.first = true;
    // A block of panels at a time: its products, xi by xi (V[xi] is read from L1 / L2 by
    // each panel), then its output transform while its M (36 x block x MR x NT) is in L2.
    const int64_t plane = g.oh * g.ow, blocks = (p1 - p0 + g.block - 1) / g.block;
    const bool leaky = g.opt.leaky_relu;
    for (int64_t bi = 0; bi < blocks; ++bi) {
        const int64_t b0 = p0 + bi * g.block, b1 = std::min(p1, b0 + g.block);
        for (int64_t xi = 0; xi < kTaps; ++xi) {
            t.b = v + xi * vs;
            for (int64_t p = b0; p < b1; ++p) {
                t.mr = static_cast<int>(std::min(mr, g.o - p * mr));
                t.a = g.u + (xi * g.panels + p) * mr * g.c;
                t.c = m + xi * ms + (p - b0) * mr * g.nt;
                g.ks.kernel(t);
            }
        }
        if (prefetch) prefetch_chunk(g, x, res, t1, std::min(g.tiles, t1 + g.nt), bi, blocks);
        const int64_t oc1 = std::min(g.o, b1 * mr);
        for_each_run(g, t0, t1, [&](int64_t ty, int64_t tx, int n, int64_t i) {
            const int rows_valid = static_cast<int>(std::min<int64_t>(4, g.oh - 4 * ty));
            const int cols = static_cast<int>(std::min<int64_t>(4 * n, g.ow - 4 * tx));
            const int64_t at = 4 * ty * g.ow + 4 * tx;
            for (int64_t oc = b0 * mr; oc < oc1; ++oc) {
                g.wk.output(m + (oc - b0 * mr) * g.nt + i, ms, n, rows_valid, cols,
                            g.bias ? g.bias[oc] : 0.0f, res ? res + oc * plane + at : nullptr,
                            out + oc * plane + at, g.ow, leaky, g.opt.negative_slope);
            }
        });
    }
}

}  // namespace

bool winograd_applies(const Tensor& x, const Tensor& weight, const Conv2dOptions& opt) {
    const cpu::GemmKernels& ks = cpu::active_gemm_kernels(weight.dtype());
    const DType wt = weight.dtype();
    if (!opt.winograd || ks.bf16_pairs || ks.nr > cpu::kWinogradMaxTiles ||
        ks.mr > cpu::kWinogradMaxMr)
        return false;
    if (wt != DType::F32 && wt != DType::F16 && wt != DType::BF16) return false;
    return opt.stride_h == 1 && opt.stride_w == 1 && weight.size(2) == 3 && weight.size(3) == 3;
}

void conv2d_winograd(const Tensor& x, const Tensor& weight, const float* bias,
                     const Conv2dOptions& opt, float* out, const float* residual) {
    const cpu::GemmKernels& ks = cpu::active_gemm_kernels(weight.dtype());
    const int64_t up = opt.upsample2x ? 2 : 1, c = x.size(1), h = x.size(2), w = x.size(3);
    const int64_t o = weight.size(0), batch = x.size(0);
    const int64_t oh = h * up + 2 * opt.pad_h - 2, ow = w * up + 2 * opt.pad_w - 2;
    const int64_t tiles_w = (ow + 3) / 4, tiles = (oh + 3) / 4 * tiles_w;
    const int64_t nt = ks.nr, panels = (o + ks.mr - 1) / ks.mr;
    const int64_t block = c <= kNarrow ? 1 : std::min(panels, kBlockPanels);
    const ScratchLease u(ScratchSlot::WinogradWeight,
                         static_cast<size_t>(kTaps * panels * ks.mr * c), true);
    const cpu::WinogradKernels& wk = cpu::winograd_kernels(ks.isa);
    transform_weight(ks, wk, weight, u.data());
    const Winograd g{ks,     wk,        c,         h,       w,       o,     oh,
                     ow,     opt.pad_h, opt.pad_w, up == 2, tiles_w, tiles, nt,
                     panels, block,     u.data(),  bias,    opt};
    const int64_t vsize = kTaps * v_stride(g), msize = kTaps * m_stride(g);
    const int64_t chunks = (tiles + nt - 1) / nt, threads = num_threads();
    const float* xs = x.data<float>();
    if (batch * chunks >= 2 * threads) {  // a chunk a thread at a time
        const auto buf = static_cast<size_t>(vsize + msize + 6 * kStrip);
        parallel_for(batch * chunks, 1, [&](int64_t i0, int64_t i1) {
            const ScratchLease lease(ScratchSlot::ConvBand, buf, true);
            float* v = lease.data();
            for (int64_t it = i0; it < i1; ++it) {
                const int64_t b = it / chunks, ch = it % chunks;
                const int64_t t0 = ch * nt, t1 = std::min(tiles, t0 + nt);
                const float* xb = xs + b * c * h * w;
                transform_input(g, xb, t0, t1, 0, c, v, v + vsize + msize);
                run_chunk(g, xb, out + b * o * oh * ow,
                          residual ? residual + b * o * oh * ow : nullptr, t0, t1, 0, panels, v,
                          ch + 1 < chunks, v + vsize);
            }
        });
        return;
    }
    // Few chunks (a small image, wide layers: a 32 x 32 latent is one chunk): one at a time,
    // the threads sharing its V, split over the input channels for the input transform and
    // over the output channels for the products.
    const ScratchLease shared_v(ScratchSlot::WinogradShared, static_cast<size_t>(vsize), true);
    float* v = shared_v.data();  // 64-byte aligned, as V's panels want
    for (int64_t b = 0; b < batch; ++b) {
        const float* xb = xs + b * c * h * w;
        for (int64_t ch = 0; ch < chunks; ++ch) {
            const int64_t t0 = ch * nt, t1 = std::min(tiles, t0 + nt);
            parallel_for(c, 8, [&](int64_t c0, int64_t c1) {
                const ScratchLease strip(ScratchSlot::ConvBand, static_cast<size_t>(6 * kStrip),
                                         true);
                transform_input(g, xb, t0, t1, c0, c1, v, strip.data());
            });
            parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
                const ScratchLease m(ScratchSlot::ConvBand, static_cast<size_t>(msize), true);
                run_chunk(g, xb, out + b * o * oh * ow,
                          residual ? residual + b * o * oh * ow : nullptr, t0, t1, p0, p1, v, false,
                          m.data());
            });
        }
    }
}

}  // namespace conv_detail

// The slots conv2d_winograd grows, at their largest for c -> o channels with the f32 kernels
// of the active instruction set (the only ones it runs with).
ScratchBound winograd_scratch_bound(int64_t c, int64_t o) {
    using namespace conv_detail;
    const cpu::GemmKernels& ks = cpu::gemm_kernels(active_isa());
    const int64_t nt = ks.nr, mr = ks.mr, panels = (o + mr - 1) / mr;
    const int64_t block = c <= kNarrow ? 1 : std::min(panels, kBlockPanels);
    const int64_t vsize = kTaps * (c * nt + 16), msize = kTaps * (block * mr * nt + 16);
    const auto bytes = [](int64_t floats) {
        return static_cast<double>(scratch_buffer_bytes(static_cast<size_t>(floats)));
    };
    ScratchBound bound;
    bound.per_thread = bytes(std::max(vsize + msize + 6 * kStrip, msize)) + bytes(9 * c * mr);
    bound.per_call = bytes(kTaps * panels * mr * c) + bytes(vsize);
    return bound;
}

}  // namespace sd
