// Rotary position embedding as FLUX applies it (ops::AttentionOptions::rope): x [B, H, L, D]
// (a strided 4-d view) into contiguous y; pair p of row l, (x[2p], x[2p+1]), becomes
// (c x[2p] - s x[2p+1], s x[2p] + c x[2p+1]) with (c, s) = table[l][p] (f32 [L, D/2, 2]).
// One invocation a pair.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Table { float table[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uvec4 shape;  // [B, H, L, D / 2]: pairs
    uvec4 strides;  // x's element strides over [B, H, L, D]
    uint offset;
    uint count;  // pairs
} p;

#include "strided_index.glsl"

void main() {
    const uint i = flat_invocation();
    if (i >= p.count) return;
    const uint pair = i % p.shape.w;
    const uint l = (i / p.shape.w) % p.shape.z;
    // The pair's first element: pair 2p along D.
    const uint at = p.offset + strided_index(i, p.shape, uvec4(p.strides.xyz, 2 * p.strides.w));
    const float x0 = x[at], x1 = x[at + p.strides.w];
    const float c = table[(l * p.shape.w + pair) * 2], s = table[(l * p.shape.w + pair) * 2 + 1];
    y[2 * i] = c * x0 - s * x1;
    y[2 * i + 1] = s * x0 + c * x1;
}
