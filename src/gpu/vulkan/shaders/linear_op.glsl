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
