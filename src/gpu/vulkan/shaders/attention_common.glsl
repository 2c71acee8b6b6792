// Scaled dot-product attention, flash style: no [Lq, Lk] score matrix is stored. The bindings
// and parameters shared by attention_d128.comp and attention_d512.comp, which set MAX_D (the
// widest q/k rows), KEYS (keys a tile) and, for d128, Q_IN_REGISTERS; the body is
// attention_tiled.glsl (GPUs), or attention_lanes.glsl where SD_LANES is defined (CPU-class
// devices; cmake/vulkan_shaders.cmake builds both). A dispatch computes 128 output columns
// from v_col0 (the wide heads take several: the scores are recomputed for each, the price of
// keeping an invocation's output row in 128 registers). A workgroup of 64 invocations takes
// 64 queries of one (batch, head), one query an invocation; a query whose keys are all masked
// (-inf) gets zeros.
layout(local_size_x = 64) in;

// q, k, v and the mask are read by q_at(i) .. mask_at(i): storage buffers for the tiled
// shaders, uniform texel buffers (one gather for all lanes) for the lanes shaders.
#ifdef SD_LANES
layout(binding = 0) uniform samplerBuffer q_t;
layout(binding = 1) uniform samplerBuffer k_t;
layout(binding = 2) uniform samplerBuffer v_t;
layout(binding = 3) uniform samplerBuffer mask_t;
#define q_at(i) texelFetch(q_t, int(i)).x
#define k_at(i) texelFetch(k_t, int(i)).x
#define v_at(i) texelFetch(v_t, int(i)).x
#define mask_at(i) texelFetch(mask_t, int(i)).x
#else
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
#define q_at(i) q[i]
#define k_at(i) k[i]
#define v_at(i) v[i]
#define mask_at(i) mask[i]
#endif
layout(std430, binding = 4) writeonly buffer O { float o[]; };

layout(push_constant) uniform Params {
    uint heads;
    uint lq;
    uint lk;
    uint d;
    uint dv;
    float scale;
    uint causal;
    uint has_mask;
    uvec4 q_strides;  // [B, H, L, D] element strides
    uvec4 k_strides;
    uvec4 v_strides;
    uvec4 mask_strides;  // broadcast to [B, H, Lq, Lk]: 0 on broadcast dimensions
    uint q_offset;
    uint k_offset;
    uint v_offset;
    uint mask_offset;
    uint v_col0;  // the first of this dispatch's (up to) 128 output columns
} p;

const uint MAX_DV = 128;

#ifdef SD_LANES
#include "attention_lanes.glsl"
#else
#include "attention_tiled.glsl"
#endif
