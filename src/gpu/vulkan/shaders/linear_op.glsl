// ops::linear as a GEMM (gemm_common.glsl): x [M, K] f32 rows x_stride apart, y [M, N] f32
// rows y_stride apart, bias [N].
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
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

float load_x(uint m, uint k) {
    return x[m * p.x_stride + k];
}

void store_y(uint m, uint n, float v) {
    y[m * p.y_stride + n] = v;
}

// gemm_lanes.glsl walks k in order for each of a lane's rows: a row is where it starts in x,
// a position the k it is at.
struct XRow {
    uint base;
};
struct KPos {
    uint k;
};

XRow x_row(uint m) {
    return XRow(m * p.x_stride);
}

KPos k_begin() {
    return KPos(0);
}

void k_next(inout KPos kp) {
    ++kp.k;
}

float x_at(XRow r, KPos kp) {
    return x[r.base + kp.k];
}
