// conv2d by Winograd's minimal filtering F(4x4, 3x3) (Lavin & Gray 2015) for 3x3
// convolutions of stride 1 with at most 64 channels each way (TAESD's 64 -> 64 layers, which
// asks for it with Conv2dOptions::winograd): each 4 x 4 block of output pixels ("tile") is
//
//     Y = A^T [ (G g G^T) . (B^T d B) ] A
//
// with d the tile's 6 x 6 input window and g a 3 x 3 kernel: 36 products per tile and
// channel pair where the direct form has 144, at the cost of the transforms (O(C + O) per
// tile, against O(C * O) for the products) and of rounding: the transforms' coefficients
// (up to 8 and 1/24) give errors about twenty times those of direct summation: at 64
// channels, inputs in [-1, 1], 1.4e-5 against 7e-7 for outputs up to 2.3 in f32.
//
// Blocking. Tiles are numbered row-major over the output (a run of them may cross tile
// rows); a task is a chunk of NT tiles (the GEMM kernel's NR, 64 on AVX-512):
//   1. input transform: for each input channel, the 6 rows of the padded (and upsampled)
//      input under the chunk's tiles are copied into a strip and transformed into
//      V[xi][c][t] (xi < 36): each V[xi] is exactly a packed B panel of the GEMM kernel
//      (NR values per k = c);
//   2. for each panel of MR output channels, 36 products M[xi] = U[xi] V[xi] ([MR, C] by
//      [C, NT]) with the GEMM microkernel, U the transformed weight packed once per call
//      into MR-row panels, then
//   3. the output transform of M into those channels' tiles, bias, residual and LeakyReLU
//      included.
// V (36 x C x NT: 576 KiB at 64 channels) stays in L2 across the panels; while a panel's
// products run, a share of the next chunk's input rows is prefetched.
// The transforms (cpu/winograd_kernels.h) are vectorised across the chunk's tiles.
#include "ops/conv_winograd.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/thread_pool.h"
#include "ops/conv_direct.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/winograd_kernels.h"

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

constexpr int64_t kMaxChannels = 64;
constexpr int kTaps = 36;  // 6 x 6 transformed values per tile

// G (6 x 3): U = G g G^T.
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

// The transformed weight as the GEMM's A panels: for each xi, ceil(O / MR) panels of MR
// output channels, a[((xi * panels + p) * C + c) * MR + i] (rows past O zero), written in
// place of what `a` held (a buffer kept from call to call: a fresh one per call cost more in
// page faults than the transform itself).
void transform_weight(const cpu::GemmKernels& ks, const Tensor& weight, float* a) {
    const int64_t o = weight.size(0), c = weight.size(1), mr = ks.mr;
    const int64_t panels = (o + mr - 1) / mr;
    std::vector<float> converted;
    if (weight.dtype() != DType::F32) converted = weight.to_vector();
    const float* g = converted.empty() ? weight.data<float>() : converted.data();
    parallel_for(panels * mr, mr, [&](int64_t r0, int64_t r1) {
        for (int64_t row = r0; row < r1; ++row) {
            const int64_t p = row / mr, i = row % mr;
            float* dst = a + p * c * mr + i;  // + (xi * panels * c + ic) * mr
            for (int64_t ic = 0; ic < c; ++ic, dst += mr) {
                double u[kTaps] = {};
                if (row < o) {
                    const float* k = g + (row * c + ic) * 9;
                    double gk[6][3];  // G g
                    for (int y = 0; y < 6; ++y)
                        for (int b = 0; b < 3; ++b)
                            gk[y][b] = kG[y][0] * k[b] + kG[y][1] * k[3 + b] + kG[y][2] * k[6 + b];
                    for (int y = 0; y < 6; ++y)
                        for (int l = 0; l < 6; ++l)
                            u[y * 6 + l] =
                                gk[y][0] * kG[l][0] + gk[y][1] * kG[l][1] + gk[y][2] * kG[l][2];
                }
                for (int xi = 0; xi < kTaps; ++xi)
                    dst[xi * panels * c * mr] = static_cast<float>(u[xi]);
            }
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

// Tiles [t0, t1) of image x (a chunk, t1 - t0 <= nt) into out (res: the residual laid out
// as out, or null); buf: the thread's V, M and strip.
void run_chunk(const Winograd& g, const float* x, float* out, const float* res, int64_t t0,
               int64_t t1, float* buf) {
    // The 36 planes of V and of M lie a cache line more than a multiple of 4 KiB apart, so
    // that the transforms' 36 streams do not fall into the same few L1 sets.
    const int64_t mr = g.ks.mr, vs = g.c * g.nt + 16, ms = mr * g.nt + 16;
    const int64_t strip = 4 * g.nt + 16;
    float* v = buf;
    float* m = v + kTaps * vs;
    float* rows = m + kTaps * ms;
    const float* seg[6];
    for (int r = 0; r < 6; ++r) seg[r] = rows + r * strip;
    for_each_run(g, t0, t1, [&](int64_t ty, int64_t tx, int n, int64_t i) {
        for (int64_t ch = 0; ch < g.c; ++ch) {
            for (int r = 0; r < 6; ++r)
                input_row(g, x, ch, 4 * ty + r, 4 * tx, 4 * n + 4, rows + r * strip);
            g.wk.input(seg, n, v + ch * g.nt + i, vs);
        }
    });
    cpu::GemmTile t;
    t.kc = g.c;
    t.a_row = 1;
    t.a_step = mr;
    t.ldc = g.nt;
    t.nr = static_cast<int>(t1 - t0);
    t.first = true;
    // One panel of MR output channels at a time, products then output transform, so that
    // its M (36 x MR x NT) stays in L1/L2 while V is read from L2 once per panel.
    const int64_t plane = g.oh * g.ow;
    const bool leaky = g.opt.leaky_relu;
    for (int64_t p = 0; p < g.panels; ++p) {
        t.mr = static_cast<int>(std::min(mr, g.o - p * mr));
        for (int64_t xi = 0; xi < kTaps; ++xi) {
            t.b = v + xi * vs;
            t.a = g.u + (xi * g.panels + p) * mr * g.c;
            t.c = m + xi * ms;
            g.ks.kernel(t);
        }
        if (t1 < g.tiles) prefetch_chunk(g, x, res, t1, std::min(g.tiles, t1 + g.nt), p, g.panels);
        for_each_run(g, t0, t1, [&](int64_t ty, int64_t tx, int n, int64_t i) {
            const int rows_valid = static_cast<int>(std::min<int64_t>(4, g.oh - 4 * ty));
            const int cols = static_cast<int>(std::min<int64_t>(4 * n, g.ow - 4 * tx));
            const int64_t at = 4 * ty * g.ow + 4 * tx;
            for (int64_t oc = p * mr; oc < p * mr + t.mr; ++oc) {
                g.wk.output(m + (oc - p * mr) * g.nt + i, ms, n, rows_valid, cols,
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
    if (!opt.winograd || ks.bf16_pairs || ks.nr > cpu::kWinogradMaxTiles) return false;
    if (wt != DType::F32 && wt != DType::F16 && wt != DType::BF16) return false;
    return opt.stride_h == 1 && opt.stride_w == 1 && weight.size(2) == 3 && weight.size(3) == 3 &&
           x.size(1) <= kMaxChannels && weight.size(0) <= kMaxChannels;
}

void conv2d_winograd(const Tensor& x, const Tensor& weight, const float* bias,
                     const Conv2dOptions& opt, float* out, const float* residual) {
    const cpu::GemmKernels& ks = cpu::active_gemm_kernels(weight.dtype());
    const int64_t up = opt.upsample2x ? 2 : 1, c = x.size(1), h = x.size(2), w = x.size(3);
    const int64_t o = weight.size(0);
    const int64_t oh = h * up + 2 * opt.pad_h - 2, ow = w * up + 2 * opt.pad_w - 2;
    const int64_t tiles_w = (ow + 3) / 4, tiles = (oh + 3) / 4 * tiles_w;
    const int64_t nt = ks.nr, panels = (o + ks.mr - 1) / ks.mr;
    thread_local std::vector<float> u;  // the calling thread's, apart from thread_scratch
    u.resize(std::max(u.size(), static_cast<size_t>(kTaps * panels * ks.mr * c)));
    transform_weight(ks, weight, u.data());
    const Winograd g{ks,        cpu::winograd_kernels(ks.isa),
                     c,         h,
                     w,         o,
                     oh,        ow,
                     opt.pad_h, opt.pad_w,
                     up == 2,   tiles_w,
                     tiles,     nt,
                     panels,    u.data(),
                     bias,      opt};
    const size_t buf = static_cast<size_t>(kTaps * ((c + ks.mr) * nt + 32) + 6 * (4 * nt + 16));
    const int64_t chunks = (tiles + nt - 1) / nt;
    for (int64_t b = 0; b < x.size(0); ++b) {
        const float* xb = x.data<float>() + b * c * h * w;
        float* ob = out + b * o * oh * ow;
        const float* rb = residual ? residual + b * o * oh * ow : nullptr;
        parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
            float* p = thread_scratch(buf);
            for (int64_t i = c0; i < c1; ++i)
                run_chunk(g, xb, ob, rb, i * nt, std::min(tiles, (i + 1) * nt), p);
        });
    }
}

}  // namespace conv_detail
}  // namespace sd
