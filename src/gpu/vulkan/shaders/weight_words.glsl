// A GEMM's weight at binding 1: its bytes as the file stores them, read as 32-bit words by
// word_at(i). The tiled shaders bind it as a storage buffer; the lanes shaders as a uniform
// texel buffer of words, and the same bytes again at binding 4 as 16-byte texels
// (words4_at(i): bytes 16 i .. 16 i + 15), the fetch of 8 f16 or 4 f32 at once.
#ifdef SD_LANES
layout(binding = 1) uniform usamplerBuffer w_words;
layout(binding = 4) uniform usamplerBuffer w_words4;

uint word_at(uint i) {
    return texelFetch(w_words, int(i)).x;
}

uvec4 words4_at(uint i) {
    return texelFetch(w_words4, int(i));
}
#else
layout(std430, binding = 1) readonly buffer W { uint w[]; };

uint word_at(uint i) {
    return w[i];
}
#endif
