// The q6_K weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_bytes.glsl"

// q6_K (210 bytes a super-block of 256: ql[128], qh[64], scales[16] signed, d):
// value = d * scales[e / 16] * (q - 32). Element e = 128 h + 32 k + l: its low 4 bits are the
// low (k < 2) or high (k >= 2) nibble of ql[64 h + 32 (k % 2) + l], its top 2 bits bits
// 2k..2k+1 of qh[32 h + l].
float load_weight(uint n, uint k) {
    const uint block = n * p.w_row_bytes + (k / 256) * 210;
    const uint e = k % 256;
    const uint h = e / 128, kk = (e / 32) % 4, l = e % 32;
    const uint low = (byte_at(block + 64 * h + 32 * (kk % 2) + l) >> (4 * (kk / 2))) & 0xFu;
    const uint top = (byte_at(block + 128 + 32 * h + l) >> (2 * kk)) & 3u;
    const float scale = float(signed_byte_at(block + 192 + e / 16));
    return half_at(block + 208) * scale * (float(low | (top << 4)) - 32.0);
}
