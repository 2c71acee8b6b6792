// sd::scaled_dot_product_attention: argument checks, packing, threading and the generic C++
// kernel. The block kernels and their tiling are described in cpu/attention_kernels.h.
//
// Work split: one task is one block of up to kBlockRows = 32 queries (4 tiles of 8) of one
// (batch, head); tasks are numbered (batch, head, block) and handed to the pool in chunks by
// sd::parallel_for, so two threads share the work even when B * H == 1 (blocks shrink to 16
// or 8 rows when there would be fewer than 4 tasks per thread). A chunk borrows a scratch
// area from a per-call pool; the area remembers which (batch, head) it holds packed K and V
// for, so a head's keys and values are packed once per thread, not once per block.
//
// Numerics: scores in f32 with q pre-scaled by scale * log2(e), softmax with exp2 (< 1 ulp,
// see the kernel header), online rescaling per key tile. A query row whose keys are all
// masked (-inf), and every row when Lk == 0, gets zeros where torch returns NaN. Non-finite
// q or k give unspecified (possibly NaN) outputs, never a crash.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "base/cpu_features.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "gpu/device_ops.h"
#include "ops/attention.h"

#include "ops/flop_counter.h"

#define SD_ATTENTION_KERNEL_BODY
#include "ops/cpu/attention_kernels.h"

namespace sd {
namespace attn {

AttentionDims check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                              const AttentionOptions& options) {
    SD_CHECK(q.defined() && k.defined() && v.defined(),
             "scaled_dot_product_attention: q, k and v must all be defined");
    const std::string qs = q.describe(), ks = k.describe(), vs = v.describe();
    SD_CHECK(q.dtype() == DType::F32 && k.dtype() == DType::F32 && v.dtype() == DType::F32,
             "scaled_dot_product_attention: q, k and v must be f32; got q %s, k %s, v %s",
             qs.c_str(), ks.c_str(), vs.c_str());
    SD_CHECK(q.device() == Device::CPU && k.device() == Device::CPU && v.device() == Device::CPU,
             "scaled_dot_product_attention: q, k and v must be on the CPU");
    SD_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
             "scaled_dot_product_attention: expects q [B, H, Lq, D], k [B, H, Lk, D], "
             "v [B, H, Lk, Dv]; got q %s, k %s, v %s",
             qs.c_str(), ks.c_str(), vs.c_str());
    AttentionDims dims;
    dims.batch = q.size(0);
    dims.heads = q.size(1);
    dims.lq = q.size(2);
    dims.d = q.size(3);
    dims.lk = k.size(2);
    dims.dv = v.size(3);
    SD_CHECK(k.size(0) == dims.batch && v.size(0) == dims.batch && k.size(1) == dims.heads &&
                 v.size(1) == dims.heads && k.size(3) == dims.d && v.size(2) == dims.lk,
             "scaled_dot_product_attention: shapes do not match: q %s, k %s, v %s (want q "
             "[B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv])",
             qs.c_str(), ks.c_str(), vs.c_str());
    SD_CHECK(dims.d >= 1, "scaled_dot_product_attention: head dim D of q %s must be >= 1",
             qs.c_str());
    constexpr int64_t kMaxHeadDim = 16384;  // bounds the per-thread scratch (O: 32 rows x Dv x W)
    SD_CHECK(dims.d <= kMaxHeadDim && dims.dv <= kMaxHeadDim,
             "scaled_dot_product_attention: head dims of q %s / v %s exceed %lld", qs.c_str(),
             vs.c_str(), static_cast<long long>(kMaxHeadDim));
    SD_CHECK(std::isfinite(options.scale), "scaled_dot_product_attention: scale %g is not finite",
             static_cast<double>(options.scale));
    dims.scale = options.scale != 0.0f
                     ? options.scale
                     : static_cast<float>(1.0 / std::sqrt(static_cast<double>(dims.d)));
    dims.causal = options.causal;
    if (options.rope.defined()) {
        const Tensor& r = options.rope;
        SD_CHECK(r.dtype() == DType::F32 && r.device() == Device::CPU && r.is_contiguous() &&
                     r.dim() == 3 && dims.d % 2 == 0 && r.size(1) == dims.d / 2 && r.size(2) == 2 &&
                     r.size(0) >= std::max(dims.lq, dims.lk),
                 "scaled_dot_product_attention: rope %s must be contiguous f32 [L >= %lld, D/2, 2] "
                 "for q %s, k %s",
                 r.describe().c_str(), static_cast<long long>(std::max(dims.lq, dims.lk)),
                 qs.c_str(), ks.c_str());
    }
    dims.causal_offset = dims.lk > dims.lq ? dims.lk - dims.lq : 0;

    if (mask.defined()) {
        const std::string ms = mask.describe();
        SD_CHECK(mask.dtype() == DType::F32,
                 "scaled_dot_product_attention: mask must be f32, got %s", ms.c_str());
        SD_CHECK(mask.device() == Device::CPU,
                 "scaled_dot_product_attention: mask must be on the CPU");
        const int64_t target[4] = {dims.batch, dims.heads, dims.lq, dims.lk};
        bool ok = mask.dim() <= 4;
        for (int i = 0; ok && i < mask.dim(); ++i) {
            const int t = 4 - mask.dim() + i;
            const int64_t n = mask.size(i);
            if (n != target[t] && n != 1) ok = false;
            dims.mask_strides[t] = n == 1 ? 0 : mask.stride(i);
        }
        SD_CHECK(ok,
                 "scaled_dot_product_attention: mask %s does not broadcast to [B, H, Lq, Lk] = "
                 "[%lld, %lld, %lld, %lld] (q %s, k %s)",
                 ms.c_str(), static_cast<long long>(dims.batch), static_cast<long long>(dims.heads),
                 static_cast<long long>(dims.lq), static_cast<long long>(dims.lk), qs.c_str(),
                 ks.c_str());
    }
    return dims;
}

namespace {

// ---- generic traits: 4-float vectors in GCC's portable vector extension (SSE2 on x86-64,
// NEON on Arm), no instruction-set intrinsics; W = 4, microkernel 4 rows x 3 vectors ----

typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));

struct GenericVec {
    static constexpr int kWidth = 4;
    static constexpr int kRows = 4;
    static constexpr int kCols = 3;
    using reg = vf4;
    static reg zero() { return reg{0.0f, 0.0f, 0.0f, 0.0f}; }
    static reg set1(float x) { return reg{x, x, x, x}; }
    static reg load(const float* p) {
        reg r;
        std::memcpy(&r, p, sizeof(r));
        return r;
    }
    static reg loadu(const float* p) { return load(p); }
    static void store(float* p, reg a) { std::memcpy(p, &a, sizeof(a)); }
    static reg fma(reg a, reg b, reg c) { return a * b + c; }
    static reg add(reg a, reg b) { return a + b; }
    static reg sub(reg a, reg b) { return a - b; }
    static reg mul(reg a, reg b) { return a * b; }
    static reg max(reg a, reg b) { return a > b ? a : b; }
    // 2^x for x <= 0: 0 below -126 (and for -inf, NaN); n = round(x) by truncating -x + 0.5,
    // f = x - n in [-0.5, 0.5], p(f) ~ 2^f, and n added into p's exponent bits.
    template <bool kMayBeInf>  // handled either way
    static reg exp2(reg x) {
        const vi4 live = x >= set1(-126.0f);
        x = live ? x : set1(-126.0f);
        x = x > zero() ? zero() : x;
        const vi4 ni = -__builtin_convertvector(set1(0.5f) - x, vi4);
        const reg f = x - __builtin_convertvector(ni, reg);
        reg p = set1(kExp2C6);
        p = p * f + kExp2C5;
        p = p * f + kExp2C4;
        p = p * f + kExp2C3;
        p = p * f + kExp2C2;
        p = p * f + kExp2C1;
        p = p * f + 1.0f;
        const vi4 bits = std::bit_cast<vi4>(p) + ni * (int32_t{1} << 23);
        const reg r = std::bit_cast<reg>(bits);
        return live ? r : zero();
    }
    static void pin(reg&) {}
    static float hsum(reg a) { return (a[0] + a[1]) + (a[2] + a[3]); }
    static float hmax(reg a) {
        const float m01 = a[0] > a[1] ? a[0] : a[1];
        const float m23 = a[2] > a[3] ? a[2] : a[3];
        return m01 > m23 ? m01 : m23;
    }
};

void run_block_generic(const BlockArgs& args) {
    run_block<GenericVec>(args);
}

}  // namespace

AttnKernel attention_kernel_generic() {
    return {GenericVec::kWidth, &run_block_generic};
}

}  // namespace attn

namespace attn {
namespace {
std::atomic<int> g_layout_choice{static_cast<int>(LayoutChoice::Auto)};
}  // namespace

void set_layout_choice(LayoutChoice choice) {
    g_layout_choice.store(static_cast<int>(choice));
}
LayoutChoice layout_choice() {
    return static_cast<LayoutChoice>(g_layout_choice.load());
}
}  // namespace attn

namespace {

using attn::kBlockRows;
using attn::kTileRows;

attn::AttnKernel select_kernel() {
#ifdef SD_X86_KERNELS
    switch (active_isa()) {
        case Isa::Avx512:
            return attn::attention_kernel_avx512();
        case Isa::Avx2:
            return attn::attention_kernel_avx2();
        default:
            break;
    }
#endif
    return attn::attention_kernel_generic();
}

inline int64_t round_up(int64_t n, int64_t m) {
    return (n + m - 1) / m * m;
}

// Transposes rows [0, L) of a [L, D] matrix (row stride sl, element stride sd) into blocks of
// W rows: dst[kb][i][l] = src[kb * W + l][i], zero past L.
void pack_transposed(const float* src, int64_t sl, int64_t sd, int64_t L, int64_t D, int W,
                     float* dst) {
    const int64_t nkb = (L + W - 1) / W;
    for (int64_t kb = 0; kb < nkb; ++kb) {
        float* blk = dst + kb * D * W;
        const int64_t j0 = kb * W;
        if (j0 + W <= L && sd == 1) {
            const float* rows[16];
            for (int l = 0; l < W; ++l) rows[l] = src + (j0 + l) * sl;
            for (int64_t i = 0; i < D; ++i) {
                for (int l = 0; l < W; ++l) blk[i * W + l] = rows[l][i];
            }
        } else {
            for (int l = 0; l < W; ++l) {
                const int64_t j = j0 + l;
                if (j < L) {
                    const float* row = src + j * sl;
                    for (int64_t i = 0; i < D; ++i) blk[i * W + l] = row[i * sd];
                } else {
                    for (int64_t i = 0; i < D; ++i) blk[i * W + l] = 0.0f;
                }
            }
        }
    }
}

// Row `x` (element stride sd) rotated by the (cos, sin) pairs `cs` and scaled into `dst`.
inline void rope_row(const float* x, int64_t sd, const float* cs, int64_t D, float scale,
                     float* dst) {
    for (int64_t p = 0; p < D / 2; ++p) {
        const float x0 = x[2 * p * sd], x1 = x[(2 * p + 1) * sd];
        const float c = cs[2 * p], sn = cs[2 * p + 1];
        dst[2 * p] = (c * x0 - sn * x1) * scale;
        dst[2 * p + 1] = (sn * x0 + c * x1) * scale;
    }
}

// pack_transposed of the keys rotated by rope (rows of D/2 (cos, sin) pairs), one row at a
// time through `tmp` (D floats).
void pack_transposed_rope(const float* src, int64_t sl, int64_t sd, int64_t L, int64_t D, int W,
                          const float* rope, float* tmp, float* dst) {
    const int64_t nkb = (L + W - 1) / W;
    for (int64_t kb = 0; kb < nkb; ++kb) {
        float* blk = dst + kb * D * W;
        for (int l = 0; l < W; ++l) {
            const int64_t j = kb * W + l;
            if (j < L) {
                rope_row(src + j * sl, sd, rope + j * D, D, 1.0f, tmp);
                for (int64_t i = 0; i < D; ++i) blk[i * W + l] = tmp[i];
            } else {
                for (int64_t i = 0; i < D; ++i) blk[i * W + l] = 0.0f;
            }
        }
    }
}

// Copies rows [0, L) of a [L, D] matrix into rows of Dp >= D floats, zero padded.
void pack_rows(const float* src, int64_t sl, int64_t sd, int64_t L, int64_t D, int64_t Dp,
               float* dst) {
    for (int64_t j = 0; j < L; ++j) {
        const float* row = src + j * sl;
        float* out = dst + j * Dp;
        if (sd == 1) {
            std::memcpy(out, row, sizeof(float) * D);
        } else {
            for (int64_t i = 0; i < D; ++i) out[i] = row[i * sd];
        }
        for (int64_t i = D; i < Dp; ++i) out[i] = 0.0f;
    }
}

// Where a block's working memory lives; borrowed per chunk of tasks.
struct Scratch {
    Tensor storage;
    float* kt = nullptr;
    float* v = nullptr;
    float* q = nullptr;
    float* mask = nullptr;  // [kBlockRows][Lk]: mask rows that are not unit-stride over keys
    float* work = nullptr;
    int64_t packed_bh = -1;  // (batch * heads + head) whose K (and V) are packed
};

class ScratchPool {
  public:
    ScratchPool(size_t kt, size_t v, size_t q, size_t mask, size_t work) {
        constexpr size_t a = attn::kAlign / sizeof(float);
        kt_ = round_up(kt, a);
        v_ = round_up(v, a);
        q_ = round_up(q, a);
        mask_ = round_up(mask, a);
        work_ = round_up(work, a);
    }

    std::unique_ptr<Scratch> acquire() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!free_.empty()) {
                std::unique_ptr<Scratch> s = std::move(free_.back());
                free_.pop_back();
                return s;
            }
        }
        auto s = std::make_unique<Scratch>();
        const size_t total = kt_ + v_ + q_ + mask_ + work_;
        s->storage = Tensor::empty({static_cast<int64_t>(total)});  // 64-byte aligned
        s->kt = s->storage.data<float>();
        s->v = s->kt + kt_;
        s->q = s->v + v_;
        s->mask = s->q + q_;
        s->work = s->mask + mask_;
        return s;
    }

    void release(std::unique_ptr<Scratch> s) {
        std::lock_guard<std::mutex> lock(mutex_);
        free_.push_back(std::move(s));
    }

  private:
    static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
    size_t kt_ = 0, v_ = 0, q_ = 0, mask_ = 0, work_ = 0;
    std::mutex mutex_;
    std::vector<std::unique_ptr<Scratch>> free_;
};

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask, const AttentionOptions& options) {
    if (on_device::any({&q, &k, &v})) [[unlikely]]
        return on_device::attention(q, k, v, mask, options);
    const attn::AttentionDims dims = attn::check_attention(q, k, v, mask, options);
    Tensor out = Tensor::empty({dims.batch, dims.heads, dims.lq, dims.dv});
    if (out.numel() == 0) return out;
    // Q.K^T and P.V: 2*Lq*Lk*(D + Dv) a head (see flop_counter.h).
    count_flops(2.0 * static_cast<double>(dims.batch * dims.heads) * static_cast<double>(dims.lq) *
                static_cast<double>(dims.lk) * static_cast<double>(dims.d + dims.dv));

    const attn::AttnKernel kernel = select_kernel();
    const int W = kernel.width;
    const int D = static_cast<int>(dims.d), Dv = static_cast<int>(dims.dv);
    const int64_t H = dims.heads, Lq = dims.lq, Lk = dims.lk;
    const int64_t Dvp = round_up(Dv, W);
    const bool has_mask = mask.defined();
    const bool copy_mask_rows = has_mask && dims.mask_strides[3] != 1;
    const float qscale = dims.scale * attn::kLog2e;

    // Value layout: Dv along the lanes, unless padding Dv to whole vectors costs clearly more
    // than KeyLanes' horizontal sums, per-key-tile reloads of O and larger O (which spills
    // L1). Costs in vector FMAs per query row; the factor 1.2 is where the two measured
    // even on Zen 5 (Dv = 24, W = 16; KeyLanes wins by 7% at Dv = 20 and 25% at Dv = 8).
    bool value_lanes = true;
    if (Dv % W != 0) {
        const double vl = static_cast<double>(Lk) * static_cast<double>(Dvp / W);
        const double kl = static_cast<double>(Dv) *
                          (static_cast<double>((Lk + W - 1) / W) +
                           static_cast<double>((Lk + attn::kKeyTile - 1) / attn::kKeyTile) + 4.0);
        value_lanes = vl <= 1.2 * kl;
    }
    if (attn::layout_choice() != attn::LayoutChoice::Auto) {
        value_lanes = attn::layout_choice() == attn::LayoutChoice::ValueLanes;
    }
    // Values already in rows of whole vectors are used in place.
    const bool v_in_place = value_lanes && Dv == Dvp && v.stride(3) == 1;

    // Tiles per block: as many as keep >= 4 chunks of work per thread.
    const int64_t bh_count = dims.batch * H;
    int tiles = attn::kMaxTiles;
    const int64_t want_tasks = int64_t{4} * num_threads();
    while (tiles > 1 &&
           bh_count * ((Lq + tiles * kTileRows - 1) / (tiles * kTileRows)) < want_tasks) {
        tiles /= 2;
    }
    const int block_rows = tiles * kTileRows;
    const int64_t blocks = (Lq + block_rows - 1) / block_rows;
    const int64_t tasks = bh_count * blocks;

    const int64_t nkp = round_up(Lk, W);  // keys rounded up to whole vectors
    ScratchPool pool(static_cast<size_t>(nkp * D),
                     v_in_place ? 0 : static_cast<size_t>(value_lanes ? Lk * Dvp : nkp * Dv),
                     static_cast<size_t>(kBlockRows) * D,
                     copy_mask_rows ? static_cast<size_t>(kBlockRows) * Lk : 0,
                     attn::work_floats(
                         value_lanes ? attn::VLayout::ValueLanes : attn::VLayout::KeyLanes, Dv, W));

    const float* qp = static_cast<const float*>(q.data_ptr());
    const float* kp = static_cast<const float*>(k.data_ptr());
    const float* vp = static_cast<const float*>(v.data_ptr());
    const float* mp = has_mask ? static_cast<const float*>(mask.data_ptr()) : nullptr;
    const float* rope = options.rope.defined() ? options.rope.data<float>() : nullptr;
    float* op = out.data<float>();

    // At least ~2e5 flops a chunk, so tiny calls stay on one thread.
    const int64_t task_flops = int64_t{2} * block_rows * std::max<int64_t>(Lk, 1) * (D + Dv);
    const int64_t grain = std::max<int64_t>(1, 200000 / std::max<int64_t>(task_flops, 1));

    const int64_t qs[4] = {q.stride(0), q.stride(1), q.stride(2), q.stride(3)};
    const int64_t ks[4] = {k.stride(0), k.stride(1), k.stride(2), k.stride(3)};
    const int64_t vs[4] = {v.stride(0), v.stride(1), v.stride(2), v.stride(3)};
    parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
        std::unique_ptr<Scratch> s = pool.acquire();
        attn::BlockArgs args;
        for (int64_t t = begin; t < end; ++t) {
            const int64_t bh = t / blocks;
            const int64_t b = bh / H, h = bh % H;
            const int64_t i0 = (t % blocks) * block_rows;
            const int rows = static_cast<int>(std::min<int64_t>(block_rows, Lq - i0));
            const int padded = static_cast<int>(round_up(rows, kTileRows));
            const float* vb = vp + b * vs[0] + h * vs[1];
            if (s->packed_bh != bh) {
                if (rope) {
                    pack_transposed_rope(kp + b * ks[0] + h * ks[1], ks[2], ks[3], Lk, D, W, rope,
                                         s->q, s->kt);  // s->q is free until the queries
                } else {
                    pack_transposed(kp + b * ks[0] + h * ks[1], ks[2], ks[3], Lk, D, W, s->kt);
                }
                if (!v_in_place) {
                    if (value_lanes) {
                        pack_rows(vb, vs[2], vs[3], Lk, Dv, Dvp, s->v);
                    } else {
                        pack_transposed(vb, vs[2], vs[3], Lk, Dv, W, s->v);
                    }
                }
                s->packed_bh = bh;
            }

            const float* qb = qp + b * qs[0] + h * qs[1];
            for (int r = 0; r < padded; ++r) {
                float* dst = s->q + r * D;
                if (r >= rows) {
                    std::memset(dst, 0, sizeof(float) * D);
                } else if (rope) {
                    rope_row(qb + (i0 + r) * qs[2], qs[3], rope + (i0 + r) * D, D, qscale, dst);
                } else if (const float* src = qb + (i0 + r) * qs[2]; qs[3] == 1) {
                    for (int i = 0; i < D; ++i) dst[i] = src[i] * qscale;
                } else {
                    for (int i = 0; i < D; ++i) dst[i] = src[i * qs[3]] * qscale;
                }
            }
            // Ask for the next block's queries now; the hardware prefetchers miss much of
            // them (4096 x 77 cross-attention ran ~30% slower with q in memory than in L2).
            if (t + 1 < end && qs[3] == 1) {
                const int64_t bh1 = (t + 1) / blocks, i1 = ((t + 1) % blocks) * block_rows;
                const int rows1 = static_cast<int>(std::min<int64_t>(block_rows, Lq - i1));
                const char* qb1 = reinterpret_cast<const char*>(qp + (bh1 / H) * qs[0] +
                                                                (bh1 % H) * qs[1] + i1 * qs[2]);
                for (int r = 0; r < rows1; ++r) {
                    const char* row = qb1 + r * qs[2] * static_cast<int64_t>(sizeof(float));
                    for (int64_t off = 0; off < D * static_cast<int64_t>(sizeof(float));
                         off += 64) {
                        __builtin_prefetch(row + off);
                    }
                }
                // And its output rows, for writing.
                const char* o1 = reinterpret_cast<const char*>(op + (bh1 * Lq + i1) * Dv);
                const int64_t obytes = rows1 * Dv * static_cast<int64_t>(sizeof(float));
                for (int64_t off = 0; off < obytes; off += 64) __builtin_prefetch(o1 + off, 1);
            }
            args.q = s->q;
            args.rows = rows;
            args.kt = s->kt;
            args.layout = value_lanes ? attn::VLayout::ValueLanes : attn::VLayout::KeyLanes;
            args.v = v_in_place ? vb : s->v;
            args.vstride = v_in_place ? vs[2] : Dvp;
            args.d = D;
            args.dv = Dv;
            for (int r = 0; r < padded; ++r) {
                const int64_t i = i0 + std::min(r, rows - 1);
                args.key_end[r] = dims.causal ? std::min(Lk, i + 1 + dims.causal_offset) : Lk;
                args.mask[r] = nullptr;
                if (!has_mask) continue;
                const float* mrow = mp + b * dims.mask_strides[0] + h * dims.mask_strides[1] +
                                    i * dims.mask_strides[2];
                if (!copy_mask_rows) {
                    args.mask[r] = mrow;
                } else if (r < rows) {
                    float* dst = s->mask + static_cast<size_t>(r) * Lk;
                    const int64_t sk = dims.mask_strides[3];
                    for (int64_t j = 0; j < Lk; ++j) dst[j] = mrow[j * sk];
                    args.mask[r] = dst;
                } else {
                    args.mask[r] = args.mask[rows - 1];
                }
            }
            args.out = op + (bh * Lq + i0) * Dv;
            args.out_stride = Dv;
            args.work = s->work;
            kernel.run_block(args);
        }
        pool.release(std::move(s));
    });
    return out;
}

}  // namespace sd
