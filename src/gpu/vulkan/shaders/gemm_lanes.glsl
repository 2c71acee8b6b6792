// A GEMM with f32 accumulation for CPU-class devices (lavapipe): out[m, n] = sum_k x(m, k) *
// w(n, k) (+ bias[n]), the same contract as gemm_tiled.glsl (the including file declares `p`,
// the bindings, store_y and a weight_DTYPE.glsl's load_weight, and instead of load_x a walk
// along k: XRow x_row(m), KPos k_begin(), k_next(inout KPos) and float x_at(XRow, KPos)).
//
// Why it differs: a CPU device runs a workgroup's invocations as the SIMD lanes of one core,
// pays for every barrier, and reads memory lane by lane (a load costs about as much as the
// arithmetic of a few dozen products). So the work is blocked to make the fewest loads.
//
// Blocking: a workgroup of 64 invocations computes 64 * ROWS rows by NR columns of y; each
// invocation ROWS rows (m = m0 + lane + 64 r) by all NR columns, its sums in registers. The
// weights are the same for every lane: k is walked in chunks of 8, each lane of a subgroup
// loading column j at k0 + (its index mod 8), and subgroupShuffle (a uniform index) handing
// value kk to all lanes, so a column costs one load per 8 k instead of 8. x is read per lane,
// ROWS values a k for ROWS * NR products: each value loaded feeds 21 products. (16 rows a lane
// are no faster on lavapipe and take LLVM four times as long to compile.) Lanes past M read
// row M-1 and store nothing; columns past N read column N-1 and store nothing; k past K is
// never summed. Needs subgroups of 8 or more lanes with shuffles (checked by the host before
// it picks this blocking).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

layout(local_size_x = 64) in;

const uint ROWS = 8;
const uint NR = 32;

void main() {
    const uint lane = gl_LocalInvocationID.x;
    const uint sub = gl_SubgroupInvocationID % 8;
    const uint n0 = gl_WorkGroupID.x * NR;
    const uint m0 = gl_WorkGroupID.y * (64 * ROWS) + lane;

    uint m[ROWS];
    XRow rows[ROWS];
    for (uint r = 0; r < ROWS; ++r) {
        m[r] = min(m0 + 64 * r, p.M - 1);
        rows[r] = x_row(m[r]);
    }
    uint n[NR];
    for (uint j = 0; j < NR; ++j) n[j] = min(n0 + j, p.N - 1);

    float acc[ROWS][NR];
    for (uint r = 0; r < ROWS; ++r)
        for (uint j = 0; j < NR; ++j) acc[r][j] = 0.0;

    KPos kp = k_begin();
    for (uint k0 = 0; k0 < p.K; k0 += 8) {
        float wk[NR];  // column j at k0 + sub
        const uint kw = min(k0 + sub, p.K - 1);
        for (uint j = 0; j < NR; ++j) wk[j] = load_weight(n[j], kw);
        const uint chunk = min(8, p.K - k0);
        for (uint kk = 0; kk < chunk; ++kk) {
            float a[ROWS];
            for (uint r = 0; r < ROWS; ++r) a[r] = x_at(rows[r], kp);
            k_next(kp);
            for (uint j = 0; j < NR; ++j) {
                const float b = subgroupShuffle(wk[j], kk);
                for (uint r = 0; r < ROWS; ++r) acc[r][j] = fma(a[r], b, acc[r][j]);
            }
        }
    }

    for (uint r = 0; r < ROWS; ++r) {
        if (m0 + 64 * r >= p.M) continue;
        for (uint j = 0; j < NR; ++j) {
            if (n0 + j >= p.N) continue;
            store_y(m[r], n0 + j, acc[r][j] + (p.has_bias != 0 ? bias[n0 + j] : 0.0));
        }
    }
}
