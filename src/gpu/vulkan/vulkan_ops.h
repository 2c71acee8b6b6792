// Ops on device buffers, recorded into a CommandRecorder (nothing runs until its submit()).
// Each is checked against src/ops/ref on lavapipe in tests/gpu/vulkan.
#pragma once

#include <cstdint>

#include "gpu/vulkan/command_recorder.h"
#include "tensor/dtype.h"

namespace sd::gpu {

// ops::linear: y[m, n] = sum_k x[m, k] w[n, k] + bias[n] for M rows of x (x_stride floats
// apart) into M rows of y (y_stride floats apart). x, bias and y are f32; w holds N rows of K
// values of `weight` (f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K: block-quant rows as GGUF
// stores them, dequantised in the shader). bias may be null. Throws sd::Error naming what is
// wrong for another dtype, a K that is not whole blocks, or a buffer too small for the sizes.
struct LinearShape {
    uint32_t M, N, K;
    uint32_t x_stride = 0;  // 0: K
    uint32_t y_stride = 0;  // 0: N
    DType weight = DType::F32;
};
void linear(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
            const VulkanBuffer* bias, VulkanBuffer& y, LinearShape shape);

}  // namespace sd::gpu
