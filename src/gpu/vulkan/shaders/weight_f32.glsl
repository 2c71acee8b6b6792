// The f32 weight of a GEMM shader (gemm_common.glsl): binding 1 and load_weight(n, k).
#include "weight_words.glsl"

float load_weight(uint n, uint k) {
    return uintBitsToFloat(word_at(n * (p.w_row_bytes >> 2) + k));
}

#ifdef SD_LANES
// w(n, k0 .. k0 + 7), k0 a multiple of 8, on rows of whole 16-byte texels: two fetches.
#define SD_WEIGHT8
void load_weight8(uint n, uint k0, out float v[8]) {
    const uint t = (n * p.w_row_bytes + 4 * k0) >> 4;
    const vec4 lo = uintBitsToFloat(words4_at(t)), hi = uintBitsToFloat(words4_at(t + 1));
    v = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
}
#endif
