// Bytes and halves of a weight read as 32-bit words (weight_words.glsl): block-quant rows are
// not word-aligned (q8_0 blocks are 34 bytes), so values are read by byte offset.
#include "weight_words.glsl"

uint byte_at(uint o) {
    return (word_at(o >> 2) >> ((o & 3u) * 8u)) & 0xFFu;
}

// The f16 at an even byte offset.
float half_at(uint o) {
    return unpackHalf2x16((word_at(o >> 2) >> ((o & 2u) * 8u)) & 0xFFFFu).x;
}

int signed_byte_at(uint o) {
    return int(byte_at(o) << 24) >> 24;
}
