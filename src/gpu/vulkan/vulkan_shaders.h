// The compute shaders of shaders/*.comp as SPIR-V, compiled by glslc at build time and
// embedded in the library (cmake/vulkan_shaders.cmake); one ShaderSpec each.
#pragma once

#include "gpu/vulkan/vulkan_kernel.h"

namespace sd::gpu::shaders {

// shaders/linear_f32.comp: x [M, K] (row stride), w [N, K], bias [N], y [M, N] (row stride).
struct LinearParams {
    uint32_t M, N, K, x_stride, y_stride, has_bias;
};
const ShaderSpec& linear_f32();

}  // namespace sd::gpu::shaders
