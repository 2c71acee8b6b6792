// GEMM driver: blocking, packing and threading, plus the plain C++ kernels.
//
//     C[M, N] = A[M, K] * B[N, K]^T (+ bias)
//
// Register tile. A microkernel (gemm_avx512.cpp: 6 x 64, gemm_avx2.cpp: 6 x 16, here 4 x 16)
// keeps an MR x NR block of C in registers: each step k loads NR values of a B panel as
// vectors, broadcasts MR values of A and issues MR * NR / width FMAs.
//
// Packed layout. A B panel holds NR rows of B for one k block, interleaved as
// b[k * NR + j]; rows past the end of B are zero, so the kernel never branches on edges
// and only masks its stores. A is read in place when it is f32 with contiguous rows
// (activations, f32 conv weights): the kernel broadcasts a[i * row + k]. Otherwise A is
// packed like B, a[k * MR + i]. Packing converts every dtype to f32 (f16/bf16 in
// registers, block-quant rows through sd::dequantize_row), so every weight dtype runs the
// f32 kernel and its conversion is paid once per element per call. No packed weight is
// cached between calls: the scratch is one shared chunk (<= kSharedBudget, from the caching
// allocator per call) plus, per thread, a task block, a dequantized block and a bf16
// conversion piece (ops/kernel_scratch.h slots, kept from call to call; their bound:
// gemm_scratch_bound).
//
// Cache blocking (measured on Zen 5: 48 KiB L1d, 1 MiB L2 per core, two 512-bit FMA pipes).
//   - K is cut into blocks of at most kc_max (1024) values, multiples of the weight's quant
//     block. Long k blocks measured best: each block costs a read-modify-write of C, while
//     the kernel streams a kc x 64 B panel from L2 at full speed.
//   - One operand is "shared": packed whole (in chunks of at most kSharedBudget bytes) by
//     all threads together, then read by every task from L2/L3. The other is "streamed": a
//     task takes a block of its rows (rows_a (96) rows of A / kTaskRowsB rows of B), packs
//     it for one k block into a per-thread buffer in L2, and multiplies it by the chunk.
//     Within a k block, each B panel is reused across all A panels of the block.
//   - M >= N (linear on many tokens): B (the weight) is shared, tasks are blocks of M.
//     M <  N (few tokens; conv2d, whose N is pixels): A is shared, tasks are blocks of N.
//     So every element of either operand is packed once per call (B once per chunk of A
//     when A is huge); for the text encoder's 77 tokens the activations are not packed at
//     all and each weight row is converted once, by the thread that uses it.
//   - M <= kDotRows (a single token or time embedding): dot products of A's rows with
//     B's rows straight from the weight, no packing; this is bound by reading the weight.
//
// bf16 compute (ComputeType::BF16, or Auto for a bf16 weight; gemm_avx512_bf16.cpp). The same
// driver with kernels whose panels hold bf16 pairs along k: the cache blocks keep their bytes, so k
// blocks hold up to 2048 values; they are cut at even k; A is always packed; and a panel from a
// packer that writes f32 (conv2d's patch gather, general strides) is packed in f32 pieces of
// kConvertK values of k and converted.
//
// Threads. Tasks (at least four per thread when the size allows) go to the pool's threads
// one at a time from an atomic counter, so a thread slowed by another process does not
// hold the others up. Products under kParallelFlops run on the calling thread.
#include "ops/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/compute_type.h"
#include "ops/kernel_scratch.h"
#include "tensor/caching_allocator.h"
#include "tensor/half.h"
#include "tensor/quant.h"

namespace sd::cpu {
namespace {

constexpr int64_t kTaskRowsB = 64;                  // B rows per task (A shared)
constexpr size_t kSharedBudget = size_t{12} << 20;  // bytes of one shared chunk
constexpr double kParallelFlops = 2e6;              // below this, one thread
constexpr int64_t kConvertK = 64;                   // k per f32 piece converted to bf16

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
    return ceil_div(a, b) * b;
}
int clamp_int(int64_t v, int64_t hi) {
    return static_cast<int>(std::min(v, hi));
}

// ---- threads and memory ----

// Calls fn(i) for every i in [0, n), handing the indices out one at a time to the pool's
// threads (tasks are coarse), or all on this thread.
template <class F>
void for_each_task(int64_t n, bool parallel, F&& fn) {
    if (n <= 0) return;
    // A cancel (base/cancel.h) stops handing out tasks; the caller then throws.
    const CancelToken* cancel = in_parallel_region() ? nullptr : current_cancel_token();
    if (!parallel || n == 1 || num_threads() == 1 || in_parallel_region()) {
        for (int64_t i = 0; i < n; ++i) {
            if (cancel) cancel->check();
            fn(i);
        }
        if (cancel) cancel->check();
        return;
    }
    std::atomic<int64_t> next{0};
    thread_pool().run(num_threads(), [&](int, int) {
        for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
             i = next.fetch_add(1, std::memory_order_relaxed)) {
            if (cancel && cancel->cancelled()) break;
            fn(i);
        }
    });
    if (cancel) cancel->check();
}

// A buffer from the caching allocator for the shared packed operand.
class SharedBuffer {
  public:
    explicit SharedBuffer(size_t count) : bytes_(std::max<size_t>(count, 1) * sizeof(float)) {
        data_ = static_cast<float*>(CachingAllocator::instance().allocate(bytes_));
    }
    ~SharedBuffer() { CachingAllocator::instance().deallocate(data_, bytes_); }
    SharedBuffer(const SharedBuffer&) = delete;
    SharedBuffer& operator=(const SharedBuffer&) = delete;
    float* data() const { return data_; }

  private:
    size_t bytes_;
    float* data_;
};

// ---- packers of the two standard sources ----

bool is_plain_float(DType dtype) {
    return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

void pack_row_source(const PanelSource& s, const GemmKernels& ks, int64_t r0, int nr, int64_t k0,
                     int64_t kc, float* dst, int R) {
    const auto* base = static_cast<const uint8_t*>(s.data);
    if (is_plain_float(s.dtype)) {
        const int64_t elem = static_cast<int64_t>(dtype_info(s.dtype).type_size);
        ks.pack_rows(s.dtype, base + (r0 * s.row_stride + k0) * elem, s.row_stride, nr, kc, dst, R);
        return;
    }
    // Block-quant rows: dequantize the k range of each row, then pack as f32.
    const ScratchLease lease(ScratchSlot::GemmDequant, static_cast<size_t>(nr) * kc);
    float* tmp = lease.data();
    for (int i = 0; i < nr; ++i) {
        const uint8_t* row = base + row_bytes(s.dtype, (r0 + i) * s.row_stride + k0);
        dequantize_row(s.dtype, row, tmp + i * kc, kc);
    }
    ks.pack_rows(DType::F32, tmp, kc, nr, kc, dst, R);
}

void pack_strided_source(const PanelSource& s, const GemmKernels& ks, int64_t r0, int nr,
                         int64_t k0, int64_t kc, float* dst, int R) {
    const float* base = static_cast<const float*>(s.data) + r0 * s.row_stride + k0 * s.k_stride;
    if (s.k_stride == 1) {
        ks.pack_rows(DType::F32, base, s.row_stride, nr, kc, dst, R);
    } else if (s.row_stride == 1) {
        ks.pack_cols(base, s.k_stride, nr, kc, dst, R);
    } else {
        for (int64_t k = 0; k < kc; ++k) {
            float* d = dst + k * R;
            for (int i = 0; i < nr; ++i) d[i] = base[i * s.row_stride + k * s.k_stride];
            for (int i = nr; i < R; ++i) d[i] = 0.0f;
        }
    }
}

// ---- the plain C++ kernels ----

constexpr int kGenericMr = 4;
constexpr int kGenericNr = 8;

// Four floats in a GCC/Clang vector: SSE2 or NEON registers, or scalars elsewhere.
typedef float Vec4 __attribute__((vector_size(16)));
constexpr int kGenericNv = kGenericNr / 4;

// Rows of A past mr read row 0 and are not stored, so the loops keep fixed trip counts and
// the tile stays in registers.
void generic_kernel(const GemmTile& t) {
    const float* rows[kGenericMr];
    for (int i = 0; i < kGenericMr; ++i) rows[i] = t.a + (i < t.mr ? i : 0) * t.a_row;
    Vec4 acc[kGenericMr][kGenericNv] = {};
    for (int64_t k = 0; k < t.kc; ++k) {
        Vec4 bv[kGenericNv];
        std::memcpy(bv, t.b + k * kGenericNr, sizeof(bv));
        for (int i = 0; i < kGenericMr; ++i) {
            const float ai = rows[i][k * t.a_step];
            for (int v = 0; v < kGenericNv; ++v) acc[i][v] += ai * bv[v];
        }
    }
    for (int i = 0; i < t.mr; ++i) {
        float out[kGenericNr];
        std::memcpy(out, acc[i], sizeof(out));
        float* ci = t.c + i * t.ldc;
        for (int j = 0; j < t.nr; ++j) {
            if (t.first) {
                ci[j] = out[j] + (t.bias_m ? t.bias_m[i] : 0.0f) + (t.bias_n ? t.bias_n[j] : 0.0f);
            } else {
                ci[j] += out[j];
            }
        }
    }
}

float load_plain(DType dtype, const void* src, int64_t index) {
    switch (dtype) {
        case DType::F16:
            return f16_to_f32(static_cast<const uint16_t*>(src)[index]);
        case DType::BF16:
            return bf16_to_f32(static_cast<const uint16_t*>(src)[index]);
        default:
            return static_cast<const float*>(src)[index];
    }
}

void generic_pack_rows(DType dtype, const void* src, int64_t ld, int nr_valid, int64_t kc,
                       float* dst, int R) {
    for (int i = 0; i < nr_valid; ++i) {
        for (int64_t k = 0; k < kc; ++k) dst[k * R + i] = load_plain(dtype, src, i * ld + k);
    }
    for (int64_t k = 0; k < kc; ++k) {
        for (int i = nr_valid; i < R; ++i) dst[k * R + i] = 0.0f;
    }
}

void generic_pack_cols(const float* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R) {
    for (int64_t k = 0; k < kc; ++k) {
        float* d = dst + k * R;
        const float* s = src + k * ld;
        for (int i = 0; i < nr_valid; ++i) d[i] = s[i];
        for (int i = nr_valid; i < R; ++i) d[i] = 0.0f;
    }
}

void generic_copy_padded(const float* row, int64_t w, int64_t iw0, int64_t step, float* d,
                         int64_t n) {
    for (int64_t t = 0; t < n; ++t) {
        const int64_t iw = iw0 + t * step;
        d[t] = iw >= 0 && iw < w ? row[iw] : 0.0f;
    }
}

void generic_dot_rows(DType dtype, const void* w, int64_t ldw, int nw, const float* x, int64_t ldx,
                      int m, int64_t k, float* y, int64_t ldy) {
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < nw; ++j) {
            float sum = 0.0f;
            for (int64_t q = 0; q < k; ++q)
                sum += x[i * ldx + q] * load_plain(dtype, w, j * ldw + q);
            y[i * ldy + j] = sum;
        }
    }
}

const GemmKernels kGenericKernels = {Isa::Generic,        kGenericMr,        kGenericNr,
                                     generic_kernel,      generic_pack_rows, generic_pack_cols,
                                     generic_copy_padded, generic_dot_rows};

// ---- blocking ----

// K cut into `count` packing blocks of `size` values (the last one shorter).
struct KBlocks {
    int64_t size = 0;
    int64_t count = 0;
    int64_t start(int64_t q) const { return q * size; }
    int64_t length(int64_t q, int64_t k) const { return std::min(size, k - q * size); }
};

KBlocks k_blocks(int64_t k, int64_t align, int64_t kc_max) {
    KBlocks kb;
    const int64_t count = ceil_div(k, std::max(kc_max, align));
    kb.size = round_up(ceil_div(k, count), align);
    kb.count = ceil_div(k, kb.size);
    return kb;
}

// Cache blocks from the size of L2 (values measured best with Zen 5's 1 MiB): a kc x NR
// B panel fills a quarter of L2, a task's rows of A (rows_a x kc) about three eighths.
struct Blocking {
    int64_t kc_max;
    int64_t rows_a;
};

// bf16 panels take half the bytes per k, so the same footprint holds twice the k.
Blocking blocking(const GemmKernels& ks) {
    const int64_t l2 = std::max<int64_t>(256 << 10, static_cast<int64_t>(cpu_features().l2_bytes));
    const int64_t value_bytes = ks.bf16_pairs ? 2 : 4;
    Blocking b;
    b.kc_max =
        std::clamp<int64_t>(l2 / 4 / (ks.nr * value_bytes) / 256 * 256, 256, 4096 / value_bytes);
    b.rows_a = std::max<int64_t>(ks.mr, l2 * 3 / 8 / (b.kc_max * value_bytes));
    return b;
}

// Rows per task of the streamed operand: a multiple of the tile, at most ~max_rows and
// few enough for four tasks per thread, spread evenly over the tasks.
int64_t task_rows(int64_t rows, int tile, int64_t max_rows) {
    const int64_t balanced = ceil_div(rows, 4 * int64_t{num_threads()});
    max_rows = std::max<int64_t>(tile, std::min(max_rows, balanced) / tile * tile);
    const int64_t count = ceil_div(rows, max_rows);
    return round_up(ceil_div(rows, count), tile);
}

// Panels of one operand for one k block: panel p, k offset kk at base + p * panel + kk * step,
// consecutive rows `row` apart.
struct Panels {
    const float* base;
    int64_t panel;
    int64_t step;
    int64_t row;
    const float* at(int64_t p) const { return base + p * panel; }
};

// Everything one product needs besides its operands.
struct Plan {
    const GemmProblem& pr;
    const GemmKernels& ks;
    Blocking blocks;
    KBlocks kb;
    bool parallel;
    bool a_direct;  // A read in place by the kernel
    // A task of a large product runs for up to a second on a busy machine: it stops between
    // its k blocks once this is cancelled (for_each_task then throws).
    const CancelToken* cancel;
};

// The shared operand packed for rows [r0, r0 + panels * tile), all k blocks: panel p of
// k block q is at data + (kb.start(q) * panels + p * kc_q) * tile.
struct SharedChunk {
    float* data;
    int64_t r0;
    int64_t panels;
    Panels block(const KBlocks& kb, int64_t q, int64_t k, int tile) const {
        return {data + kb.start(q) * panels * tile, kb.length(q, k) * tile, tile, 1};
    }
};

// Whether src packs through the kernels' pack_rows / pack_cols (so bf16 kernels get bf16
// panels from it).
bool packs_with_kernels(const PanelSource& src) {
    return src.pack == pack_row_source ||
           (src.pack == pack_strided_source && (src.k_stride == 1 || src.row_stride == 1));
}

// One panel of src for bf16 kernels from a packer that writes f32: f32 pieces of k (even
// multiples of k_align), each converted with pack_cols.
void pack_converted(const Plan& plan, const PanelSource& src, int tile, int64_t r, int nr,
                    int64_t k0, int64_t kc, float* dst) {
    const GemmKernels& f32_kernels = gemm_kernels(plan.ks.isa);
    const int64_t piece = std::lcm(kConvertK, src.k_align);
    const ScratchLease lease(ScratchSlot::GemmConvert, static_cast<size_t>(tile) * piece);
    float* tmp = lease.data();
    for (int64_t j = 0; j < kc; j += piece) {
        const int64_t len = std::min(piece, kc - j);
        src.pack(src, f32_kernels, r, nr, k0 + j, len, tmp, tile);
        plan.ks.pack_cols(tmp, tile, tile, len, dst + j / 2 * tile, tile);
    }
}

void pack_panels(const Plan& plan, const PanelSource& src, int tile, int64_t rows, int64_t r0,
                 int64_t panels, int64_t k0, int64_t kc, float* dst) {
    const bool convert = plan.ks.bf16_pairs && !packs_with_kernels(src);
    for (int64_t p = 0; p < panels; ++p) {
        const int64_t r = r0 + p * tile;
        const int nr = clamp_int(rows - r, tile);
        if (convert) {
            pack_converted(plan, src, tile, r, nr, k0, kc, dst + p * tile * kc);
        } else {
            src.pack(src, plan.ks, r, nr, k0, kc, dst + p * tile * kc, tile);
        }
    }
}

void pack_shared_chunk(const Plan& plan, const PanelSource& src, int tile, int64_t rows,
                       const SharedChunk& chunk) {
    const KBlocks& kb = plan.kb;
    for_each_task(chunk.panels * kb.count, plan.parallel, [&](int64_t it) {
        const int64_t q = it / chunk.panels, p = it % chunk.panels;
        const Panels blk = chunk.block(kb, q, plan.pr.k, tile);
        pack_panels(plan, src, tile, rows, chunk.r0 + p * tile, 1, kb.start(q),
                    kb.length(q, plan.pr.k), const_cast<float*>(blk.at(p)));
    });
}

// A's rows [m0, m0 + ...) of k block q in place (f32 rows with unit k stride).
Panels direct_a(const Plan& plan, int64_t m0, int64_t q) {
    const PanelSource& a = plan.pr.a;
    const float* base = static_cast<const float*>(a.data) + m0 * a.row_stride + plan.kb.start(q);
    return {base, plan.ks.mr * a.row_stride, 1, a.row_stride};
}

// The tiles of rows [m0, m1) x [n0, n1) for k block q, each B panel (kc x NR) reused
// across all A panels of the block.
void multiply_block(const Plan& plan, const Panels& a, int64_t m0, int64_t m1, const Panels& b,
                    int64_t n0, int64_t n1, int64_t q) {
    const GemmProblem& pr = plan.pr;
    const int MR = plan.ks.mr, NR = plan.ks.nr;
    const int64_t a_panels = ceil_div(m1 - m0, MR), b_panels = ceil_div(n1 - n0, NR);
    GemmTile t;
    t.kc = plan.kb.length(q, pr.k);
    t.a_row = a.row;
    t.a_step = a.step;
    t.ldc = pr.ldc;
    t.first = q == 0;
    for (int64_t j = 0; j < b_panels; ++j) {
        const int64_t n = n0 + j * NR;
        t.b = b.at(j);
        t.nr = clamp_int(n1 - n, NR);
        t.bias_n = t.first && pr.bias_n ? pr.bias_n + n : nullptr;
        for (int64_t i = 0; i < a_panels; ++i) {
            const int64_t m = m0 + i * MR;
            t.a = a.at(i);
            t.mr = clamp_int(m1 - m, MR);
            t.c = pr.c + m * pr.ldc + n;
            t.bias_m = t.first && pr.bias_m ? pr.bias_m + m : nullptr;
            plan.ks.kernel(t);
        }
    }
}

// B shared: tasks are blocks of rows of A, each multiplied by the chunk's B panels.
void run_b_shared(const Plan& plan, const SharedChunk& chunk) {
    const GemmProblem& pr = plan.pr;
    const int MR = plan.ks.mr, NR = plan.ks.nr;
    const int64_t block = task_rows(pr.m, MR, plan.blocks.rows_a);
    const int64_t n0 = chunk.r0, n1 = std::min(pr.n, chunk.r0 + chunk.panels * NR);
    const bool direct = plan.a_direct;
    for_each_task(ceil_div(pr.m, block), plan.parallel, [&](int64_t t) {
        const int64_t m0 = t * block, m1 = std::min(pr.m, m0 + block);
        const ScratchLease lease(ScratchSlot::GemmBlock,
                                 direct ? 0 : static_cast<size_t>(block) * plan.kb.size);
        float* ap = lease.data();
        for (int64_t q = 0; q < plan.kb.count; ++q) {
            if (plan.cancel && plan.cancel->cancelled()) return;
            const int64_t kc = plan.kb.length(q, pr.k);
            Panels a = direct ? direct_a(plan, m0, q) : Panels{ap, MR * kc, MR, 1};
            if (!direct) {
                pack_panels(plan, pr.a, MR, pr.m, m0, ceil_div(m1 - m0, MR), plan.kb.start(q), kc,
                            ap);
            }
            multiply_block(plan, a, m0, m1, chunk.block(plan.kb, q, pr.k, NR), n0, n1, q);
        }
    });
}

// A shared: tasks are blocks of rows of B, each multiplied by the chunk's A panels (or by
// A in place).
void run_a_shared(const Plan& plan, const SharedChunk* chunk) {
    const GemmProblem& pr = plan.pr;
    const int MR = plan.ks.mr, NR = plan.ks.nr;
    const int64_t block = task_rows(pr.n, NR, kTaskRowsB);
    const int64_t m0 = chunk ? chunk->r0 : 0;
    const int64_t m1 = chunk ? std::min(pr.m, m0 + chunk->panels * MR) : pr.m;
    for_each_task(ceil_div(pr.n, block), plan.parallel, [&](int64_t t) {
        const int64_t n0 = t * block, n1 = std::min(pr.n, n0 + block);
        const ScratchLease lease(ScratchSlot::GemmBlock, static_cast<size_t>(block) * plan.kb.size);
        float* bp = lease.data();
        for (int64_t q = 0; q < plan.kb.count; ++q) {
            if (plan.cancel && plan.cancel->cancelled()) return;
            const int64_t kc = plan.kb.length(q, pr.k);
            pack_panels(plan, pr.b, NR, pr.n, n0, ceil_div(n1 - n0, NR), plan.kb.start(q), kc, bp);
            const Panels a = chunk ? chunk->block(plan.kb, q, pr.k, MR) : direct_a(plan, m0, q);
            multiply_block(plan, a, m0, m1, Panels{bp, NR * kc, NR, 1}, n0, n1, q);
        }
    });
}

// Packs the shared operand chunk by chunk (within kSharedBudget) and runs the tasks on each.
void run_shared(const Plan& plan, bool b_shared) {
    const GemmProblem& pr = plan.pr;
    const PanelSource& src = b_shared ? pr.b : pr.a;
    const int tile = b_shared ? plan.ks.nr : plan.ks.mr;
    const int64_t rows = b_shared ? pr.n : pr.m;
    const int64_t total = ceil_div(rows, tile);
    const size_t panel_bytes = static_cast<size_t>(tile) * pr.k * sizeof(float);
    const int64_t chunks = ceil_div(total, std::max<int64_t>(1, kSharedBudget / panel_bytes));
    const int64_t per_chunk = ceil_div(total, chunks);
    SharedBuffer buffer(static_cast<size_t>(per_chunk) * tile * pr.k);
    for (int64_t c = 0; c < chunks; ++c) {
        const SharedChunk chunk{buffer.data(), c * per_chunk * tile,
                                std::min(per_chunk, total - c * per_chunk)};
        pack_shared_chunk(plan, src, tile, rows, chunk);
        if (b_shared) {
            run_b_shared(plan, chunk);
        } else {
            run_a_shared(plan, &chunk);
        }
    }
}

// ---- products with very few rows of A: dot products, no packing ----

constexpr int64_t kDotTaskRows = 64;  // rows of B per task

bool use_dot_rows(const GemmProblem& pr) {
    return pr.m <= kDotRows && pr.a.direct && pr.b.pack == pack_row_source;
}

// C rows [0, m) x columns [n0, n1) by dot products with B's rows, 4 at a time (block-quant
// rows dequantized first).
void dot_block(const GemmProblem& pr, const GemmKernels& ks, int64_t n0, int64_t n1) {
    const PanelSource& b = pr.b;
    const float* x = static_cast<const float*>(pr.a.data);
    const auto* w = static_cast<const uint8_t*>(b.data);
    const bool plain = is_plain_float(b.dtype);
    const ScratchLease lease(ScratchSlot::GemmDequant,
                             plain ? 0 : static_cast<size_t>(kDotRows) * pr.k);
    float* tmp = lease.data();
    for (int64_t n = n0; n < n1; n += kDotRows) {
        const int nw = clamp_int(n1 - n, kDotRows);
        float* y = pr.c + n;
        if (plain) {
            const int64_t elem = static_cast<int64_t>(dtype_info(b.dtype).type_size);
            ks.dot_rows(b.dtype, w + n * b.row_stride * elem, b.row_stride, nw, x, pr.a.row_stride,
                        static_cast<int>(pr.m), pr.k, y, pr.ldc);
        } else {
            for (int j = 0; j < nw; ++j) {
                dequantize_row(b.dtype, w + row_bytes(b.dtype, (n + j) * b.row_stride),
                               tmp + j * pr.k, pr.k);
            }
            ks.dot_rows(DType::F32, tmp, pr.k, nw, x, pr.a.row_stride, static_cast<int>(pr.m), pr.k,
                        y, pr.ldc);
        }
        for (int64_t i = 0; i < pr.m; ++i) {
            for (int j = 0; j < nw; ++j) {
                y[i * pr.ldc + j] +=
                    (pr.bias_m ? pr.bias_m[i] : 0.0f) + (pr.bias_n ? pr.bias_n[n + j] : 0.0f);
            }
        }
    }
}

void run_dot_rows(const GemmProblem& pr, const GemmKernels& ks, bool parallel) {
    for_each_task(ceil_div(pr.n, kDotTaskRows), parallel, [&](int64_t t) {
        dot_block(pr, ks, t * kDotTaskRows, std::min(pr.n, (t + 1) * kDotTaskRows));
    });
}

// C = bias only (K == 0).
void fill_bias(const GemmProblem& pr) {
    for (int64_t m = 0; m < pr.m; ++m) {
        float* row = pr.c + m * pr.ldc;
        for (int64_t n = 0; n < pr.n; ++n) {
            row[n] = (pr.bias_m ? pr.bias_m[m] : 0.0f) + (pr.bias_n ? pr.bias_n[n] : 0.0f);
        }
    }
}

}  // namespace

const GemmKernels& gemm_kernels(Isa isa) {
#ifdef SD_X86_KERNELS
    if (isa == Isa::Avx512 && best_supported_isa() == Isa::Avx512) return gemm_kernels_avx512();
    if (isa >= Isa::Avx2 && best_supported_isa() >= Isa::Avx2) return gemm_kernels_avx2();
#endif
    (void)isa;
    return kGenericKernels;
}

const GemmKernels& active_gemm_kernels(DType weight) {
    const Isa isa = active_isa();
#ifdef SD_X86_KERNELS
    // compute_type() is BF16 or Auto only where bf16_compute_supported().
    if (isa == Isa::Avx512 && bf16_products(weight)) {
        return gemm_kernels_avx512_bf16();
    }
#endif
    return gemm_kernels(isa);
}

PanelSource row_source(DType dtype, const void* data, int64_t row_stride) {
    PanelSource s;
    s.pack = pack_row_source;
    s.k_align = block_size(dtype);
    s.data = data;
    s.dtype = dtype;
    s.row_stride = row_stride;
    s.direct = dtype == DType::F32;
    return s;
}

PanelSource strided_source(const float* data, int64_t row_stride, int64_t k_stride) {
    PanelSource s;
    s.pack = pack_strided_source;
    s.data = data;
    s.row_stride = row_stride;
    s.k_stride = k_stride;
    s.direct = k_stride == 1;
    return s;
}

void gemm(const GemmProblem& pr) {
    if (pr.m <= 0 || pr.n <= 0) return;
    if (pr.k <= 0) {
        fill_bias(pr);
        return;
    }
    const bool bf16_operand = pr.a.dtype == DType::BF16 || pr.b.dtype == DType::BF16;
    const GemmKernels& ks = active_gemm_kernels(bf16_operand ? DType::BF16 : DType::F32);
    const double flops = 2.0 * static_cast<double>(pr.m) * pr.n * pr.k;
    const Blocking blocks = blocking(ks);
    const int64_t k_align =
        std::lcm(std::lcm(pr.a.k_align, pr.b.k_align), int64_t{ks.bf16_pairs ? 2 : 1});
    const KBlocks kb = k_blocks(pr.k, k_align, blocks.kc_max);
    const Plan plan{pr,
                    ks,
                    blocks,
                    kb,
                    flops >= kParallelFlops,
                    pr.a.direct && !ks.bf16_pairs,
                    in_parallel_region() ? nullptr : current_cancel_token()};
    const bool b_shared = pr.m >= pr.n;
    if (use_dot_rows(pr)) {
        // Each weight value is used at most kDotRows times: reading it is the cost.
        run_dot_rows(pr, ks, static_cast<double>(pr.n) * pr.k >= kParallelFlops / 8);
    } else if (!b_shared && plan.a_direct) {
        run_a_shared(plan, nullptr);  // A is used in place: nothing to share
    } else {
        run_shared(plan, b_shared);
    }
}

}  // namespace sd::cpu

namespace sd {

// Each slot at the largest request the driver makes: task blocks of at most
// max(rows_a, kTaskRowsB, tile) rows (task_rows) by k blocks of at most kc_max values (kc_max
// is a multiple of every quant block, so k_blocks never rounds past it); dequantized rows of
// one panel's k block, or kDotRows whole rows for dot products; converted pieces of
// lcm(kConvertK, k_align <= 256) values. The shared chunk is at most kSharedBudget, or one
// panel of all of k when that is larger.
ScratchBound gemm_scratch_bound(int64_t k) {
    using namespace cpu;
    std::vector<const GemmKernels*> families{&gemm_kernels(active_isa())};
#ifdef SD_X86_KERNELS
    if (active_isa() == Isa::Avx512 && bf16_compute_supported())
        families.push_back(&gemm_kernels_avx512_bf16());
#endif
    constexpr int64_t kMaxKAlign = 256;  // the largest quant block (K-quants)
    ScratchBound bound;
    for (const GemmKernels* ks : families) {
        const Blocking b = blocking(*ks);
        const int64_t tile = std::max(ks->mr, ks->nr);
        const int64_t rows = std::max({b.rows_a, kTaskRowsB, tile});
        const auto bytes = [](int64_t floats) {
            return static_cast<double>(scratch_buffer_bytes(static_cast<size_t>(floats)));
        };
        ScratchBound one;
        one.per_thread = bytes(rows * b.kc_max) +
                         bytes(std::max(tile * b.kc_max, int64_t{kDotRows} * k)) +
                         bytes(tile * std::lcm(kConvertK, kMaxKAlign));
        const size_t panel = static_cast<size_t>(tile * k) * sizeof(float);
        one.per_call =
            static_cast<double>(CachingAllocator::size_class(std::max(kSharedBudget, panel)));
        bound.max_with(one);
    }
    return bound;
}

}  // namespace sd
