// ops::conv2d (groups 1, dilation 1) as an implicit GEMM (gemm_common.glsl): row m of the GEMM
// is output pixel (b, oy, ox), column n output channel o, k = (c, ky, kx) as the weight
// [O, C, KH, KW] lays out its rows. x [B, C, H, W] f32 contiguous is read in place (im2col
// on the fly, zero padding, optionally upsampled 2x by nearest neighbour); out [B, O, OH, OW]
// f32 contiguous, optionally through LeakyReLU.
#ifdef SD_LANES
layout(binding = 0) uniform samplerBuffer x_t;
layout(binding = 2) uniform samplerBuffer bias_t;
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
#endif
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint M;  // B * OH * OW
    uint N;  // O
    uint K;  // C * KH * KW
    uint has_bias;
    uint w_row_bytes;
    uint C;
    uint H;  // of x as stored (before the upsampling)
    uint W;
    uint OH;
    uint OW;
    uint KH;
    uint KW;
    uint stride_h;
    uint stride_w;
    uint pad_h;
    uint pad_w;
    uint upsample2x;
    uint leaky_relu;
    float negative_slope;
} p;

void store_y(uint m, uint n, float v) {
    const uint pixels = p.OH * p.OW;
    if (p.leaky_relu != 0 && v < 0.0) v *= p.negative_slope;
    y[((m / pixels) * p.N + n) * pixels + m % pixels] = v;
}

#ifdef SD_LANES
float bias_at(uint n) {
    return texelFetch(bias_t, int(n)).x;
}

// gemm_lanes.glsl reads x(m, k) as a row (its output pixel's input origin) and a position
// along k as (c, ky, kx), decomposed once for all the rows that share it.
struct XRow {
    uint base;  // element 0 of the pixel's image, b * C * H * W
    int iy0;    // oy * stride_h - pad_h, in the (upsampled) input
    int ix0;
};
struct KPos {
    uint c, ky, kx;
};

XRow x_row(uint m) {
    const uint ox = m % p.OW, oy = (m / p.OW) % p.OH, b = m / (p.OW * p.OH);
    return XRow(b * p.C * p.H * p.W, int(oy * p.stride_h) - int(p.pad_h),
                int(ox * p.stride_w) - int(p.pad_w));
}

// q = a / b for a < 2^24: the float quotient is off by at most one, and mended. (An integer
// division of a vector is a loop over its lanes on a CPU device.)
uint div_small(uint a, uint b) {
    uint q = uint(float(a) / float(b));
    if (q * b > a) --q;
    if ((q + 1) * b <= a) ++q;
    return q;
}

KPos k_pos(uint k) {
    const uint taps = p.KH * p.KW;
    const uint c = div_small(k, taps), t = k - c * taps;
    const uint ky = div_small(t, p.KW);
    return KPos(c, ky, t - ky * p.KW);
}

// Branch-free (a branch is a masked path for every lane): the fetch at a clamped place, zero
// where the tap falls in the padding.
float x_at(XRow r, KPos kp) {
    const int iy = r.iy0 + int(kp.ky), ix = r.ix0 + int(kp.kx);
    const uint up = p.upsample2x != 0 ? 1 : 0;  // a shift: no division in the inner loop
    const bool inside = all(bvec4(iy >= 0, ix >= 0, iy < int(p.H << up), ix < int(p.W << up)));
    const uint at = r.base + (kp.c * p.H + (uint(max(iy, 0)) >> up)) * p.W + (uint(max(ix, 0)) >> up);
    const float v = texelFetch(x_t, int(at)).x;
    return inside ? v : 0.0;
}
#else
float bias_at(uint n) {
    return bias[n];
}

float load_x(uint m, uint k) {
    const uint ox = m % p.OW, oy = (m / p.OW) % p.OH, b = m / (p.OW * p.OH);
    const uint kx = k % p.KW, ky = (k / p.KW) % p.KH, c = k / (p.KW * p.KH);
    const int iy = int(oy * p.stride_h + ky) - int(p.pad_h);
    const int ix = int(ox * p.stride_w + kx) - int(p.pad_w);
    const uint up = p.upsample2x != 0 ? 2 : 1;
    if (iy < 0 || ix < 0 || iy >= int(p.H * up) || ix >= int(p.W * up)) return 0.0;
    return x[((b * p.C + c) * p.H + uint(iy) / up) * p.W + uint(ix) / up];
}
#endif
