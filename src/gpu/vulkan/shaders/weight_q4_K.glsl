// The q4_K weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_bytes.glsl"
#include "k_quant_scales.glsl"

// q4_K (144 bytes a super-block of 256: d, dmin, scales[12], qs[128]):
// value = d * scale * q - dmin * min; element e = 64 c + 32 h + l is nibble h of qs[32 c + l].
float load_weight(uint n, uint k) {
    const uint block = n * p.w_row_bytes + (k / 256) * 144;
    const uint e = k % 256;
    const uint c = e / 64, h = (e / 32) % 2, l = e % 32;
    const uint q = (byte_at(block + 16 + 32 * c + l) >> (4 * h)) & 0xFu;
    const vec2 sm = scale_min_k4(e / 32, block + 4);
    return half_at(block) * sm.x * float(q) - half_at(block + 2) * sm.y;
}
