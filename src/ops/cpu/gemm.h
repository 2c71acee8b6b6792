// The dense-product engine behind linear, matmul and conv2d (internal to src/ops).
//
//     C[M, N] = A[M, K] * B[N, K]^T  (+ bias_n[n] + bias_m[m])
//
// Both operands are seen as "rows of K values": row m of A and row n of B. Where those rows
// come from is up to a PanelSource, which copies a block of rows into the microkernel's
// packed layout (converting any dtype to f32 on the way). linear's weight is B as stored;
// conv2d's weight is A and its input patches are B, gathered while packing.
//
// The blocking scheme, the threading and the microkernels are described in gemm.cpp.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "tensor/dtype.h"

namespace sd::cpu {

// One call of a microkernel: the mr x nr tile of C at c (row stride ldc),
//   first: C = acc + bias_m[i] + bias_n[j] (either bias may be null), else C += acc,
// acc[i][j] = sum over k < kc of a[i * a_row + k * a_step] * b[k * NR + j]. A packed A panel
// has a_row = 1, a_step = MR; f32 rows used in place have a_row = row stride, a_step = 1.
struct GemmTile {
    int64_t kc = 0;
    const float* a = nullptr;
    int64_t a_row = 0, a_step = 0;
    const float* b = nullptr;  // packed B panel, NR values per k, 64-byte aligned
    // For offset_kernel only: B for step k is the NR values at b + b_offsets[k], read in
    // place (unaligned; values past nr are read and ignored, so they must be readable).
    const int32_t* b_offsets = nullptr;
    float* c = nullptr;
    int64_t ldc = 0;
    int mr = 0, nr = 0;  // valid rows of A (<= MR) and of B (<= NR)
    bool first = true;
    const float* bias_m = nullptr;
    const float* bias_n = nullptr;
    // LeakyReLU on what is stored (the x86 kernels; set only on a tile's last k block):
    // values below 0 are multiplied by leaky_slope.
    bool leaky = false;
    float leaky_slope = 0.0f;
    // A residual added to what is stored, before the LeakyReLU (the x86 kernels; set only on
    // a tile's last k block): C[i][j] += add[i * ldc + j].
    const float* add = nullptr;
};

// The kernels of one instruction set: register tile, microkernel and packers.
struct GemmKernels {
    Isa isa;
    int mr;  // rows of A in the register tile (broadcast side)
    int nr;  // rows of B in the register tile (vector side)

    void (*kernel)(const GemmTile& tile);

    // Packs nr_valid rows, each holding kc values of `dtype` (f32, f16 or bf16) contiguous
    // from src + i * ld (ld in elements), into dst[k * R + i]; rows nr_valid..R-1 become 0.
    void (*pack_rows)(DType dtype, const void* src, int64_t ld, int nr_valid, int64_t kc,
                      float* dst, int R);

    // Packs f32 values laid out with the row index contiguous: dst[k * R + i] =
    // src[k * ld + i] for i < nr_valid, 0 above.
    void (*pack_cols)(const float* src, int64_t ld, int nr_valid, int64_t kc, float* dst, int R);

    // d[t] = row[iw0 + t * step] where that column is inside [0, w), else 0, for t < n:
    // one zero-padded stretch of an image row (conv2d gathers its patches with it).
    void (*copy_padded)(const float* row, int64_t w, int64_t iw0, int64_t step, float* d,
                        int64_t n);

    // Dot products for products with very few rows of A (no packing):
    // y[i * ldy + j] = sum_k x[i * ldx + k] * w_j[k] for i < m, j < nw (both <= kDotRows),
    // where w_j = w + j * ldw (ld in elements) holds k values of `dtype` (f32, f16, bf16).
    void (*dot_rows)(DType dtype, const void* w, int64_t ldw, int nw, const float* x, int64_t ldx,
                     int m, int64_t k, float* y, int64_t ldy);

    // Panels hold bf16 pairs along k (ComputeType::BF16, gemm_avx512_bf16.cpp): pack_rows and
    // pack_cols write word [p * R + i] = rounded values (2p, 2p + 1) of row i, A is always
    // packed, and panels from other packers are packed as f32 and converted with pack_cols.
    // copy_padded and dot_rows stay f32.
    bool bf16_pairs = false;

    // `kernel` with B read in place through GemmTile::b_offsets (conv2d's direct path, see
    // ops/conv_direct.cpp); null where the family has none (generic, bf16 pairs).
    void (*offset_kernel)(const GemmTile& tile) = nullptr;
};

// Rows of A (and of B) that one dot_rows call takes at most.
constexpr int kDotRows = 4;

// The kernels for `isa` (lowered to what this build has).
const GemmKernels& gemm_kernels(Isa isa);
// The kernels for a product whose weight is stored as `weight`: the bf16 ones where
// bf16_products(weight) (ops/compute_type.h) while the active family is avx512, else
// gemm_kernels(active_isa()).
const GemmKernels& active_gemm_kernels(DType weight);

// Where the rows of one operand come from.
struct PanelSource {
    // Fills dst[k * R + i] with element (r0 + i, k0 + k) for i < nr, k < kc, and 0 for
    // nr <= i < R. k0 and kc are multiples of k_align (kc may end at K). Custom packers
    // always get f32 kernels (the driver converts their panels for bf16 ones).
    using PackFn = void (*)(const PanelSource& src, const GemmKernels& kernels, int64_t r0, int nr,
                            int64_t k0, int64_t kc, float* dst, int R);
    PackFn pack = nullptr;
    int64_t k_align = 1;
    // The rows are f32 with unit k stride (element (r, k) at data[r * row_stride + k]), so
    // the kernel can read them in place.
    bool direct = false;

    // State for the packers below (and for custom ones in `ctx`).
    const void* data = nullptr;
    DType dtype = DType::F32;
    int64_t row_stride = 0;  // elements between rows
    int64_t k_stride = 1;    // elements between consecutive k (plain dtypes)
    const void* ctx = nullptr;
};

// Rows of any dtype with contiguous K (block-quant rows are dequantized with
// sd::dequantize_row, so k blocks stay aligned to the dtype's block size).
PanelSource row_source(DType dtype, const void* data, int64_t row_stride);
// f32 elements at data[r * row_stride + k * k_stride] (any strides, including 0).
PanelSource strided_source(const float* data, int64_t row_stride, int64_t k_stride);

struct GemmProblem {
    int64_t m = 0, n = 0, k = 0;
    PanelSource a, b;
    float* c = nullptr;
    int64_t ldc = 0;
    const float* bias_m = nullptr;  // [m] or null
    const float* bias_n = nullptr;  // [n] or null
};

// Runs the product on the thread pool (inline when called from inside a pool task) with
// active_gemm_kernels() of the weight: bf16 when either operand is stored in bf16.
void gemm(const GemmProblem& problem);

// Kernel tables of each instruction set, defined in gemm_avx2.cpp / gemm_avx512.cpp.
#ifdef SD_X86_KERNELS
const GemmKernels& gemm_kernels_avx2();
const GemmKernels& gemm_kernels_avx512();
const GemmKernels& gemm_kernels_avx512_bf16();  // gemm_avx512_bf16.cpp
#endif

}  // namespace sd::cpu
