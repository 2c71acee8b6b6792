#version 450
#include "linear_common.glsl"

layout(std430, binding = 1) readonly buffer W { uint w[]; };
#include "weight_bytes.glsl"

float load_weight(uint n, uint k) {
    return half_at(n * p.w_row_bytes + 2 * k);
}
