// The device's FP32 peak: each invocation runs 8 independent FMA chains in registers for
// `iterations` rounds (16 FMAs a round: 32 FLOPs), no memory traffic but one store at the end
// so the compiler keeps the work. sd-bench-vulkan divides the FLOPs by the time.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) writeonly buffer Out { float result[]; };

layout(push_constant) uniform Params {
    uint iterations;
    float seed;
} p;

void main() {
    const float s = p.seed + float(gl_GlobalInvocationID.x) * 1e-7;
    vec4 a = vec4(s, s + 1e-3, s + 2e-3, s + 3e-3);
    vec4 b = a + 0.5;
    const vec4 m = vec4(0.999999);
    const vec4 c = vec4(1e-6);
    for (uint i = 0; i < p.iterations; ++i) {
        a = fma(a, m, c);
        b = fma(b, m, c);
        a = fma(a, m, c);
        b = fma(b, m, c);
    }
    result[gl_GlobalInvocationID.x] = dot(a, b);
}
