// Scale and min of sub-block j (0..7) of a q4_K / q5_K block whose 12 scale bytes start at
// byte s: 6 bits each; sub-blocks 0..3 in the low 6 bits of scales[j] and scales[j + 4];
// 4..7 the low 4 bits in the nibbles of scales[j + 4], the top 2 in bits 6..7 of
// scales[j - 4] / scales[j].
vec2 scale_min_k4(uint j, uint s) {
    if (j < 4) return vec2(float(byte_at(s + j) & 63u), float(byte_at(s + j + 4) & 63u));
    const uint sc = (byte_at(s + j + 4) & 0xFu) | ((byte_at(s + j - 4) >> 6) << 4);
    const uint mn = (byte_at(s + j + 4) >> 4) | ((byte_at(s + j) >> 6) << 4);
    return vec2(float(sc), float(mn));
}
