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

void linear_f32(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
                const VulkanBuffer* bias, VulkanBuffer& y, LinearShape s) {
    if (s.x_stride == 0) s.x_stride = s.K;
    if (s.y_stride == 0) s.y_stride = s.N;
    SD_CHECK(s.x_stride >= s.K && s.y_stride >= s.N,
             "Vulkan linear: row strides %u / %u below K = %u / N = %u", s.x_stride, s.y_stride,
             s.K, s.N);
    check_fits(x, span_bytes(s.M, s.K, s.x_stride), "x");
    check_fits(w, span_bytes(s.N, s.K, s.K), "weight");
    if (bias) check_fits(*bias, uint64_t(s.N) * sizeof(float), "bias");
    check_fits(y, span_bytes(s.M, s.N, s.y_stride), "y");
    const shaders::LinearParams params{s.M, s.N, s.K, s.x_stride, s.y_stride, bias ? 1u : 0u};
    const VulkanKernel& kernel = rec.device().kernel(shaders::linear_f32());
    // Without a bias the weight is bound in its place and never read.
    rec.dispatch(kernel, {&x, &w, bias ? bias : &w, &y}, &params, sizeof(params), (s.N + 63) / 64,
                 (s.M + 63) / 64);
}

}  // namespace sd::gpu
