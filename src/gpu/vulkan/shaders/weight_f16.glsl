// The f16 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
layout(std430, binding = 1) readonly buffer W { uint w[]; };
#include "weight_bytes.glsl"

float load_weight(uint n, uint k) {
    return half_at(n * p.w_row_bytes + 2 * k);
}
