// The q5_K weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_bytes.glsl"
#include "k_quant_scales.glsl"

// q5_K (176 bytes a super-block of 256: d, dmin, scales[12], qh[32], qs[128]): as q4_K with
// q in 0..31; bit 4 of element e is bit e / 32 of qh[e % 32].
float load_weight(uint n, uint k) {
    const uint block = n * p.w_row_bytes + (k / 256) * 176;
    const uint e = k % 256;
    const uint c = e / 64, h = (e / 32) % 2, l = e % 32;
    const uint low = (byte_at(block + 48 + 32 * c + l) >> (4 * h)) & 0xFu;
    const uint high = (byte_at(block + 16 + l) >> (e / 32)) & 1u;
    const vec2 sm = scale_min_k4(e / 32, block + 4);
    return half_at(block) * sm.x * float(low | (high << 4)) - half_at(block + 2) * sm.y;
}
