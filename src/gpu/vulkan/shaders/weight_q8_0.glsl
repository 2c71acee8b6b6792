// The q8_0 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_bytes.glsl"

// q8_0 (34 bytes a block of 32): value = d * q, d an f16, q signed bytes.
float load_weight(uint n, uint k) {
    const uint block = n * p.w_row_bytes + (k / 32) * 34;
    return half_at(block) * float(signed_byte_at(block + 2 + k % 32));
}
