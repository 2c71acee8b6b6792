// The f32 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
layout(std430, binding = 1) readonly buffer W { float w[]; };

float load_weight(uint n, uint k) {
    return w[n * p.K + k];
}
