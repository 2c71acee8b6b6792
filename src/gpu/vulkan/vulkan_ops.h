// Ops on device buffers, recorded into a CommandRecorder (nothing runs until its submit()).
// Each is checked against src/ops/ref on lavapipe in tests/gpu/vulkan.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpu/vulkan/command_recorder.h"
#include "gpu/vulkan/vulkan_shaders.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace sd::gpu {

// ops::linear: y[m, n] = sum_k x[m, k] w[n, k] + bias[n] for M rows of x (x_stride floats
// apart) into M rows of y (y_stride floats apart). x, bias and y are f32; w holds N rows of K
// values of `weight` (f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K: block-quant rows as GGUF
// stores them, dequantised in the shader). bias may be null. Throws sd::Error naming what is
// wrong for another dtype, a K that is not whole blocks, or a buffer too small for the sizes.
// The blocking a device runs best: Lanes on a CPU-class device with subgroups of 8 lanes or
// more (the lanes shaders shuffle across 8), else Tiled.
shaders::Blocking device_blocking(const VulkanDevice& device);
// `asked`, or the device's where unset. Throws sd::Error naming the device for Lanes on a
// device without such subgroups.
shaders::Blocking blocking_for(const VulkanDevice& device, std::optional<shaders::Blocking> asked);

struct LinearShape {
    uint32_t M, N, K;
    uint32_t x_stride = 0;  // 0: K
    uint32_t y_stride = 0;  // 0: N
    DType weight = DType::F32;
    std::optional<shaders::Blocking> blocking;  // unset: the device's (device_blocking())
};
void linear(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
            const VulkanBuffer* bias, VulkanBuffer& y, LinearShape shape);

// ops::conv2d as an implicit GEMM: x f32 [batch, channels, height, width] contiguous, w
// [out_channels, channels, kernel_h, kernel_w] of `weight` (the linear dtypes; a block-quant
// weight needs rows of whole blocks), bias [out_channels] f32 or null, y f32 [batch,
// out_channels, out_h(), out_w()] contiguous; zero padding, stride, the input read upsampled
// 2x (nearest) and LeakyReLU as ops::Conv2dOptions. Throws sd::Error naming what is wrong.
struct Conv2dShape {
    uint32_t batch, channels, height, width;
    uint32_t out_channels, kernel_h, kernel_w;
    uint32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    bool upsample2x = false;
    bool leaky_relu = false;
    float negative_slope = 0.01f;
    DType weight = DType::F32;
    std::optional<shaders::Blocking> blocking;  // unset: the device's (device_blocking())
    uint32_t out_h() const;
    uint32_t out_w() const;
};
void conv2d(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
            const VulkanBuffer* bias, VulkanBuffer& y, const Conv2dShape& shape);

// Where a tensor's elements lie in a device buffer, as the pointwise shaders see it: four
// dimensions (leading sizes of 1 added), element strides (0 on a broadcast dimension), the
// offset of element 0 in elements.
struct View4 {
    uint32_t shape[4] = {1, 1, 1, 1};
    uint32_t strides[4] = {0, 0, 0, 0};
    uint32_t offset = 0;
    uint64_t numel() const;
};
// The view of a tensor of `shape` with `strides` (elements) at `offset`. Throws sd::Error for
// more than 4 dimensions or sizes past 32 bits.
View4 view4(const Shape& shape, const Strides& strides, int64_t offset = 0);
View4 contiguous_view4(const Shape& shape);
// `v` broadcast to `shape` as torch broadcasts (a size-1 dimension repeats: stride 0).
// Throws sd::Error naming both shapes where a size is neither 1 nor the target's.
View4 broadcast_view4(const View4& v, const uint32_t (&shape)[4]);

enum class UnaryOp : uint32_t {
    Silu,
    Gelu,
    GeluTanh,
    QuickGelu,
    Sigmoid,
    Tanh,
    Clamp,
    Scale,
    AddScalar,
    Copy,
};
// y (contiguous, x's shape) = op(x): activation.h's pointwise functions, clamp(a, b),
// scale(a), add_scalar(a), copy.
void unary(CommandRecorder& rec, UnaryOp op, const VulkanBuffer& x, const View4& xv,
           VulkanBuffer& y, float a = 0.0f, float b = 0.0f);
// The same into a view of y of xv's shape (a permuted or sliced place: concat, copy_into).
void unary_into(CommandRecorder& rec, UnaryOp op, const VulkanBuffer& x, const View4& xv,
                VulkanBuffer& y, const View4& yv, float a = 0.0f, float b = 0.0f);
// ops::concat of contiguous f32 parts along `dim` (of their common 4-d shape) into contiguous
// y: one copy a part into its place.
struct ConcatPart {
    const VulkanBuffer* buffer;
    View4 view;
};
void concat(CommandRecorder& rec, const std::vector<ConcatPart>& parts, int dim, VulkanBuffer& y);

// FLUX's rotary position embedding (ops::AttentionOptions::rope) as its own op: x [B, H, L, D]
// (a view, D even), table f32 [L', D / 2, 2] (cos, sin) with L' >= L, into contiguous y.
void rope(CommandRecorder& rec, const VulkanBuffer& x, const View4& xv, const VulkanBuffer& table,
          uint32_t table_rows, VulkanBuffer& y);

enum class BinaryOp : uint32_t { Add, Sub, Mul, Div };
// y (contiguous, of av's shape) = a op b; av and bv of one shape (broadcast_view4 them).
void binary(CommandRecorder& rec, BinaryOp op, const VulkanBuffer& a, const View4& av,
            const VulkanBuffer& b, const View4& bv, VulkanBuffer& y);

// Normalisations of contiguous f32 data into contiguous y (the same size); weight and bias
// (f32, one a channel) may be null.
// group_norm: x [batch, channels, spatial...], as ops::group_norm (and SiLU after).
void group_norm(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t batch,
                uint32_t channels, uint32_t spatial, uint32_t groups, const VulkanBuffer* weight,
                const VulkanBuffer* bias, float eps, bool silu = false);
// layer_norm / rms_norm / softmax over the last dimension: `rows` rows of n.
void layer_norm(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t rows,
                uint32_t n, const VulkanBuffer* weight, const VulkanBuffer* bias, float eps);
void rms_norm(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t rows,
              uint32_t n, const VulkanBuffer* weight, float eps);
void softmax(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t rows,
             uint32_t n);

// ops::scaled_dot_product_attention: q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv] (any
// strides: their views), mask (may be null: f32 added to the scores, its view broadcast to
// [B, H, Lq, Lk]) into contiguous out [B, H, Lq, Dv]. scale 0: 1 / sqrt(D). q/k heads up to
// 512 wide (a dispatch for each 128 columns of v); no rotary embedding (rope is its own op).
// Throws sd::Error naming what does not fit.
struct AttentionShape {
    uint32_t batch, heads, lq, lk, d, dv;
    float scale = 0.0f;
    bool causal = false;
    std::optional<shaders::Blocking> blocking;  // unset: the device's (device_blocking())
};
void attention(CommandRecorder& rec, const AttentionShape& shape, const VulkanBuffer& q,
               const View4& qv, const VulkanBuffer& k, const View4& kv, const VulkanBuffer& v,
               const View4& vv, const VulkanBuffer* mask, const View4& mask_view,
               VulkanBuffer& out);

}  // namespace sd::gpu
