// The bf16 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_words.glsl"

// bf16: the top half of an f32.
float load_weight(uint n, uint k) {
    const uint o = n * p.w_row_bytes + 2 * k;
    return uintBitsToFloat(((word_at(o >> 2) >> ((o & 2u) * 8u)) & 0xFFFFu) << 16);
}

#ifdef SD_LANES
// w(n, k0 .. k0 + 7), k0 a multiple of 8, on rows of whole 16-byte texels: one fetch.
#define SD_WEIGHT8
void load_weight8(uint n, uint k0, out float v[8]) {
    const uvec4 t = words4_at((n * p.w_row_bytes + 2 * k0) >> 4);
    v = float[8](uintBitsToFloat(t.x << 16), uintBitsToFloat(t.x & 0xFFFF0000u),
                 uintBitsToFloat(t.y << 16), uintBitsToFloat(t.y & 0xFFFF0000u),
                 uintBitsToFloat(t.z << 16), uintBitsToFloat(t.z & 0xFFFF0000u),
                 uintBitsToFloat(t.w << 16), uintBitsToFloat(t.w & 0xFFFF0000u));
}
#endif
