// A GEMM with f32 accumulation for GPUs: out[m, n] = sum_k x(m, k) * w(n, k) (+ bias[n]), the body of
// the linear and conv2d shaders. The including file first declares the push constants `p`
// (with M, N, K, has_bias), the x, bias (binding 2) and output bindings and
//   float bias_at(uint n);               bias[n]
//   float load_x(uint m, uint k);        x as an [M, K] matrix (conv2d: im2col on the fly)
//   void store_y(uint m, uint n, float);  where out[m, n] goes (conv2d: NCHW, activation)
// then includes a weight_DTYPE.glsl (binding 1, load_weight(n, k): w[n, k] as f32,
// dequantised from GGUF's blocks), then this file.
//
// Blocking: a workgroup of 16 x 16 threads computes a 64 x 64 tile of y; each thread the 4 x 4
// outputs (ty + 16 i, tx + 16 j). The K axis is walked in slices of 16: the workgroup stages
// the slice's 64 x 16 of x and of w in shared memory (transposed, k-major, so the inner loop
// reads 4 + 4 values for 16 products), then every thread accumulates. Rows past M or N and
// k past K are read as 0 and never stored.
layout(local_size_x = 16, local_size_y = 16) in;

const uint TILE = 64;
const uint SLICE = 16;

shared float xs[SLICE][TILE + 1];
shared float ws[SLICE][TILE + 1];

void main() {
    const uint tx = gl_LocalInvocationID.x;
    const uint ty = gl_LocalInvocationID.y;
    const uint tid = ty * 16 + tx;
    const uint m0 = gl_WorkGroupID.y * TILE;
    const uint n0 = gl_WorkGroupID.x * TILE;

    float acc[4][4];
    for (uint i = 0; i < 4; ++i)
        for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;

    for (uint k0 = 0; k0 < p.K; k0 += SLICE) {
        // 64 rows x 16 k of each operand: 1024 values, 4 a thread.
        for (uint e = tid; e < TILE * SLICE; e += 256) {
            const uint r = e / SLICE;
            const uint c = e % SLICE;
            const uint k = k0 + c;
            const uint m = m0 + r;
            const uint n = n0 + r;
            xs[c][r] = (m < p.M && k < p.K) ? load_x(m, k) : 0.0;
            ws[c][r] = (n < p.N && k < p.K) ? load_weight(n, k) : 0.0;
        }
        barrier();
        for (uint c = 0; c < SLICE; ++c) {
            float a[4];
            float b[4];
            for (uint i = 0; i < 4; ++i) a[i] = xs[c][ty + 16 * i];
            for (uint j = 0; j < 4; ++j) b[j] = ws[c][tx + 16 * j];
            for (uint i = 0; i < 4; ++i)
                for (uint j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier();
    }

    for (uint i = 0; i < 4; ++i) {
        const uint m = m0 + ty + 16 * i;
        if (m >= p.M) continue;
        for (uint j = 0; j < 4; ++j) {
            const uint n = n0 + tx + 16 * j;
            if (n >= p.N) continue;
            store_y(m, n, acc[i][j] + (p.has_bias != 0 ? bias_at(n) : 0.0));
        }
    }
}
