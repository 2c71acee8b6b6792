// ops::linear as a GEMM (gemm_common.glsl): x [M, K] f32 rows x_stride apart, y [M, N] f32
// rows y_stride apart, bias [N].
#ifdef SD_LANES
layout(binding = 0) uniform samplerBuffer x_t;
layout(binding = 2) uniform samplerBuffer bias_t;
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
#endif
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint M;
    uint N;
    uint K;
    uint x_stride;  // elements between rows of x
    uint y_stride;  // elements between rows of y
    uint has_bias;
    uint w_row_bytes;  // bytes of one weight row (K values in the weight's dtype)
} p;

void store_y(uint m, uint n, float v) {
    y[m * p.y_stride + n] = v;
}

#ifdef SD_LANES
float bias_at(uint n) {
    return texelFetch(bias_t, int(n)).x;
}

// gemm_lanes.glsl reads x(m, k) as a row (where it starts in x) and a position along k.
struct XRow {
    uint base;
};
struct KPos {
    uint k;
};

XRow x_row(uint m) {
    return XRow(m * p.x_stride);
}

KPos k_pos(uint k) {
    return KPos(k);
}

float x_at(XRow r, KPos kp) {
    return texelFetch(x_t, int(r.base + kp.k)).x;
}
#else
float bias_at(uint n) {
    return bias[n];
}

float load_x(uint m, uint k) {
    return x[m * p.x_stride + k];
}
#endif
