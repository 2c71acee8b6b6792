// The q4_0 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_bytes.glsl"

// q4_0 (18 bytes a block of 32): value = d * (q - 8); element j < 16 is the low nibble of
// qs[j], element j >= 16 the high nibble of qs[j - 16].
float load_weight(uint n, uint k) {
    const uint block = n * p.w_row_bytes + (k / 32) * 18;
    const uint j = k % 32;
    const uint q = (byte_at(block + 2 + j % 16) >> (4 * (j / 16))) & 0xFu;
    return half_at(block) * (float(q) - 8.0);
}
