#include "gpu/vulkan/vulkan_ops.h"

#include "base/error.h"
#include "gpu/vulkan/vulkan_shaders.h"

namespace sd::gpu {
namespace {

// Bytes a strided [rows, cols] f32 matrix spans.
uint64_t span_bytes(uint32_t rows, uint32_t cols, uint32_t stride) {
    if (rows == 0 || cols == 0) return 0;
    return (uint64_t(rows - 1) * stride + cols) * sizeof(float);
}

void check_fits(const VulkanBuffer& b, uint64_t bytes, const char* what) {
    SD_CHECK(bytes <= b.size(), "Vulkan linear: %s needs %llu bytes, its buffer has %zu", what,
             static_cast<unsigned long long>(bytes), b.size());
}

}  // namespace

void linear(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
            const VulkanBuffer* bias, VulkanBuffer& y, LinearShape s) {
    const ShaderSpec* spec = shaders::linear(s.weight);
    SD_CHECK(spec,
             "Vulkan linear: no shader for %s weights (f32, f16, bf16, q8_0, q4_0, q4_K, "
             "q5_K, q6_K have one)",
             dtype_name(s.weight));
    SD_CHECK(s.K % block_size(s.weight) == 0,
             "Vulkan linear: K = %u is not a whole number of %s blocks of %lld", s.K,
             dtype_name(s.weight), static_cast<long long>(block_size(s.weight)));
    if (s.x_stride == 0) s.x_stride = s.K;
    if (s.y_stride == 0) s.y_stride = s.N;
    SD_CHECK(s.x_stride >= s.K && s.y_stride >= s.N,
             "Vulkan linear: row strides %u / %u below K = %u / N = %u", s.x_stride, s.y_stride,
             s.K, s.N);
    const uint64_t w_row_bytes = row_bytes(s.weight, s.K);
    // The shaders address the weight in 32-bit byte offsets, x and y in 32-bit float indices.
    SD_CHECK(w_row_bytes * s.N <= UINT32_MAX && uint64_t(s.M) * s.x_stride <= UINT32_MAX &&
                 uint64_t(s.M) * s.y_stride <= UINT32_MAX,
             "Vulkan linear: %u x %u x %u is beyond the shader's 32-bit addressing", s.M, s.N, s.K);
    check_fits(x, span_bytes(s.M, s.K, s.x_stride), "x");
    check_fits(w, w_row_bytes * s.N, "the weight");
    if (bias) check_fits(*bias, uint64_t(s.N) * sizeof(float), "the bias");
    check_fits(y, span_bytes(s.M, s.N, s.y_stride), "y");
    const shaders::LinearParams params{
        s.M, s.N, s.K, s.x_stride, s.y_stride, bias ? 1u : 0u, static_cast<uint32_t>(w_row_bytes)};
    const VulkanKernel& kernel = rec.device().kernel(*spec);
    // Without a bias the weight is bound in its place and never read.
    rec.dispatch(kernel, {&x, &w, bias ? bias : &w, &y}, &params, sizeof(params), (s.N + 63) / 64,
                 (s.M + 63) / 64);
}

}  // namespace sd::gpu
