// Ops on device buffers, recorded into a CommandRecorder (nothing runs until its submit()).
// Each is checked against src/ops/ref on lavapipe in tests/gpu/vulkan.
#pragma once

#include <cstdint>

#include "gpu/vulkan/command_recorder.h"

namespace sd::gpu {

// ops::linear with f32 weights: y[m, n] = sum_k x[m, k] w[n, k] + bias[n] for M rows of x
// (x_stride floats apart) into M rows of y (y_stride floats apart). bias may be null. Throws
// sd::Error when a buffer is too small for the sizes given.
struct LinearShape {
    uint32_t M, N, K;
    uint32_t x_stride = 0;  // 0: K
    uint32_t y_stride = 0;  // 0: N
};
void linear_f32(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
                const VulkanBuffer* bias, VulkanBuffer& y, LinearShape shape);

}  // namespace sd::gpu
