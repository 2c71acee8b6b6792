// y[i] = a[...] op b[...] over strided 4-d views of a and b (broadcast dimensions with
// stride 0) into contiguous y: ops/elementwise.h's add, sub, mul, div.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uvec4 shape;
    uvec4 a_strides;
    uvec4 b_strides;
    uint a_offset;
    uint b_offset;
    uint count;
    uint op;
} p;

#include "strided_index.glsl"

const uint ADD = 0, SUB = 1, MUL = 2, DIV = 3;

void main() {
    const uint i = flat_invocation();
    if (i >= p.count) return;
    const float va = a[p.a_offset + strided_index(i, p.shape, p.a_strides)];
    const float vb = b[p.b_offset + strided_index(i, p.shape, p.b_strides)];
    float r;
    switch (p.op) {
        case ADD: r = va + vb; break;
        case SUB: r = va - vb; break;
        case MUL: r = va * vb; break;
        default: r = va / vb; break;  // DIV
    }
    y[i] = r;
}
