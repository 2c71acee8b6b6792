// The GEMM body of the linear and conv2d shaders: out[m, n] = sum_k x(m, k) * w(n, k)
// (+ bias[n]). Each NAME.comp is compiled twice (cmake/vulkan_shaders.cmake): as NAME with the
// shared-memory tiling GPUs want (gemm_tiled.glsl), and as NAME_lanes with SD_LANES for
// CPU-class devices (gemm_lanes.glsl: no shared memory, no barrier).
#ifdef SD_LANES
#include "gemm_lanes.glsl"
#else
#include "gemm_tiled.glsl"
#endif
