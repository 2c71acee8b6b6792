// The f16 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_bytes.glsl"

float load_weight(uint n, uint k) {
    return half_at(n * p.w_row_bytes + 2 * k);
}

#ifdef SD_LANES
// w(n, k0 .. k0 + 7), k0 a multiple of 8, on rows of whole 16-byte texels: one fetch.
#define SD_WEIGHT8
void load_weight8(uint n, uint k0, out float v[8]) {
    const uvec4 t = words4_at((n * p.w_row_bytes + 2 * k0) >> 4);
    const vec2 a = unpackHalf2x16(t.x), b = unpackHalf2x16(t.y), c = unpackHalf2x16(t.z),
               d = unpackHalf2x16(t.w);
    v = float[8](a.x, a.y, b.x, b.y, c.x, c.y, d.x, d.y);
}
#endif
