#version 450
#include "linear_common.glsl"

layout(std430, binding = 1) readonly buffer W { float w[]; };

float load_weight(uint n, uint k) {
    return w[n * p.K + k];
}
