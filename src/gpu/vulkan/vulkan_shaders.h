// The compute shaders of shaders/*.comp as SPIR-V, compiled by glslc at build time and
// embedded in the library (cmake/vulkan_shaders.cmake); one ShaderSpec each.
#pragma once

#include "gpu/vulkan/vulkan_kernel.h"
#include "tensor/dtype.h"

namespace sd::gpu::shaders {

// How the GEMM and attention shaders block their work; each is built both ways.
enum class Blocking {
    Tiled,  // operands staged in shared memory by the workgroup (GPUs)
    Lanes,  // read in place, no shared memory, no barrier (CPU-class devices: SD_LANES)
};
// The outputs of y a GEMM workgroup computes: 64 x 64 tiled (gemm_tiled.glsl), 16 rows x 64
// columns in lanes (gemm_lanes.glsl).
struct GemmTile {
    uint32_t rows, cols;
};
GemmTile gemm_tile(Blocking blocking);

// shaders/linear_DTYPE.comp (linear_op.glsl over gemm_common.glsl): x [M, K] f32 (row
// stride), w [N, K] of the dtype (rows of w_row_bytes), bias [N] f32, y [M, N] f32 (row
// stride); the lanes shaders bind the weight a fifth time, as 16-byte texels (x, w, bias, y,
// w). The grid: column blocks in x, row blocks in y and, past the device's limit, in z.
struct LinearParams {
    uint32_t M, N, K, x_stride, y_stride, has_bias, w_row_bytes;
};
// The shader of a weight dtype: f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K; nullptr for
// the others.
const ShaderSpec* linear(DType weight, Blocking blocking);

// shaders/conv2d_DTYPE.comp (conv2d_op.glsl over gemm_common.glsl): x [B, C, H, W], w
// [O, C, KH, KW] of the dtype, bias [O], y [B, O, OH, OW]; the same weight dtypes as linear.
struct Conv2dParams {
    uint32_t M, N, K, has_bias, w_row_bytes, C, H, W, OH, OW, KH, KW, stride_h, stride_w, pad_h,
        pad_w, upsample2x, leaky_relu;
    float negative_slope;
};
const ShaderSpec* conv2d(DType weight, Blocking blocking);

// shaders/unary.comp: y = op(x) between strided 4-d views of one shape; a, b the op's scalars.
struct UnaryParams {
    uint32_t shape[4], strides[4], y_strides[4], offset, y_offset, count, op;
    float a, b;
};
const ShaderSpec& unary();

// shaders/rope.comp: pairs of a strided [B, H, L, D] view rotated by table [L, D/2, 2].
struct RopeParams {
    uint32_t shape[4], strides[4], offset, count;
};
const ShaderSpec& rope();

// shaders/binary.comp: y[i] = a op b at the strided 4-d indices of i.
struct BinaryParams {
    uint32_t shape[4], a_strides[4], b_strides[4], a_offset, b_offset, count, op;
};
const ShaderSpec& binary();

// shaders/norm.comp: one workgroup a contiguous row of x.
struct NormParams {
    uint32_t rows, row_len, spatial, groups, mode;
    float eps;
    uint32_t has_weight, has_bias, silu;
};
const ShaderSpec& norm();

// shaders/attention_d128.comp / attention_d512.comp: q, k, v, mask, out.
struct AttentionParams {
    uint32_t heads, lq, lk, d, dv;
    float scale;
    uint32_t causal, has_mask;
    uint32_t q_strides[4], k_strides[4], v_strides[4], mask_strides[4];
    uint32_t q_offset, k_offset, v_offset, mask_offset;
    uint32_t v_col0;  // the dispatch's first output column (128 a dispatch)
};
// The attention shader for q/k rows of d and v rows of dv: d128 where both are at most 128,
// d512 (several dispatches for dv > 128) where d is at most 512, nullptr past that.
const ShaderSpec* attention(uint32_t d, uint32_t dv, Blocking blocking);

// shaders/peak_fma.comp: FMA chains in registers (the device's FP32 peak, for benchmarks).
struct PeakParams {
    uint32_t iterations;
    float seed;
};
const ShaderSpec& peak_fma();

}  // namespace sd::gpu::shaders
