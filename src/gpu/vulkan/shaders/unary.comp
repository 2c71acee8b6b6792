// y = f(x) from a strided 4-d view of x into a strided 4-d view of y of the same shape: the
// activations of ops/activation.h, the scalar ops of ops/elementwise.h and a plain copy (a
// permuted view in, a channel range of a concatenation out), one invocation an element.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uvec4 shape;
    uvec4 strides;
    uvec4 y_strides;
    uint offset;
    uint y_offset;
    uint count;
    uint op;
    float a;
    float b;
} p;

#include "strided_index.glsl"

const uint SILU = 0, GELU = 1, GELU_TANH = 2, QUICK_GELU = 3, SIGMOID = 4, TANH = 5, CLAMP = 6,
           SCALE = 7, ADD_SCALAR = 8, COPY = 9;

float sigmoid(float v) {
    return 1.0 / (1.0 + exp(-v));
}

// erfc with a relative error below 1.2e-7 everywhere (Chebyshev fit, Numerical Recipes'
// erfcc): GLSL has no erf.
float erfc_approx(float v) {
    const float z = abs(v);
    const float t = 1.0 / (1.0 + 0.5 * z);
    const float r =
        t * exp(-z * z - 1.26551223 +
                t * (1.00002368 +
                     t * (0.37409196 +
                          t * (0.09678418 +
                               t * (-0.18628806 +
                                    t * (0.27886807 +
                                         t * (-1.13520398 +
                                              t * (1.48851587 +
                                                   t * (-0.82215223 + t * 0.17087277)))))))));
    return v >= 0.0 ? r : 2.0 - r;
}

void main() {
    const uint i = flat_invocation();
    if (i >= p.count) return;
    const float v = x[p.offset + strided_index(i, p.shape, p.strides)];
    float r;
    switch (p.op) {
        case SILU: r = v * sigmoid(v); break;
        case GELU: r = 0.5 * v * erfc_approx(-v * 0.70710678118654752); break;
        case GELU_TANH: {
            // x / (1 + exp(-2u)): 0.5 x (1 + tanh(u)) without the cancellation of 1 + tanh.
            const float u = 0.79788456080286535 * (v + 0.044715 * v * v * v);
            r = v / (1.0 + exp(-2.0 * u));
            break;
        }
        case QUICK_GELU: r = v * sigmoid(1.702 * v); break;
        case SIGMOID: r = sigmoid(v); break;
        case TANH: r = tanh(v); break;
        case CLAMP: r = clamp(v, p.a, p.b); break;
        case SCALE: r = v * p.a; break;
        case ADD_SCALAR: r = v + p.a; break;
        default: r = v; break;  // COPY
    }
    y[p.y_offset + strided_index(i, p.shape, p.y_strides)] = r;
}
