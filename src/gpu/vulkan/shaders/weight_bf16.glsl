// The bf16 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
layout(std430, binding = 1) readonly buffer W { uint w[]; };

// bf16: the top half of an f32.
float load_weight(uint n, uint k) {
    const uint o = n * p.w_row_bytes + 2 * k;
    return uintBitsToFloat(((w[o >> 2] >> ((o & 2u) * 8u)) & 0xFFFFu) << 16);
}
