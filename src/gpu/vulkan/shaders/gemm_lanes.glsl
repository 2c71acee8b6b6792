// A GEMM with f32 accumulation for CPU-class devices (lavapipe): out[m, n] = sum_k x(m, k) *
// w(n, k) (+ bias[n]), the same contract as gemm_tiled.glsl, but the including file declares,
// in place of load_x, x as rows and positions along k: XRow x_row(m), KPos k_pos(k) and
// float x_at(XRow, KPos); bias_at(n); and the weight_DTYPE.glsl's load_weight(n, k) (with
// load_weight8 where SD_WEIGHT8 is defined).
//
// Why it differs: a CPU device runs a workgroup's invocations as the SIMD lanes of one core
// and pays for what GPUs get for free: a barrier synchronises the lanes, a storage-buffer or
// shared-memory read is a loop over them. A uniform texel buffer is fetched for all lanes with
// one gather whatever its width (a 16-byte texel costs about what a 4-byte one does), so the
// operands come through texel buffers and the blocking minimises fetches per product.
//
// Blocking: a workgroup is one subgroup of 8 lanes and computes 16 rows by 64 columns of y:
// lane l the columns n0 + l + 8 j (j < 8) of all 16 rows, its 128 sums in registers. k is
// walked in chunks of 8. Each lane fetches its 8 columns' weights at k0 .. k0 + 7 (one 16-byte
// fetch for 8 f16 or bf16, two for f32; value by value for the block-quant types and for rows
// that are not whole texels) and, for each row, x at k0 + l; subgroupShuffle then hands x at
// each k of the chunk to all lanes. A chunk is 16 + 8 fetches for 1024 products a lane (f16).
// Rows past M read row M-1 and store nothing, columns past N read column N-1 and store
// nothing, k past K are zero. The small tile keeps waste low where M is small (a UNet's inner
// levels: 64 rows at 8x8) and N a multiple of 64; row blocks past 65535 spill into z.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

layout(local_size_x = 8) in;

const uint ROWS = 16;
const uint COLS = 8;  // columns a lane, 8 apart

// w(n, k0 .. k0 + 7) value by value; values past K are 0.
void weights8(uint n, uint k0, out float v[8]) {
    for (uint i = 0; i < 8; ++i) {
        const float w = load_weight(n, min(k0 + i, p.K - 1));  // a select, not a branch
        v[i] = k0 + i < p.K ? w : 0.0;
    }
}

void main() {
    const uint lane = gl_LocalInvocationID.x;
    const uint n0 = gl_WorkGroupID.x * (8 * COLS) + lane;
    const uint m0 = (gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y) * ROWS;
    if (m0 >= p.M) return;

    XRow rows[ROWS];
    for (uint r = 0; r < ROWS; ++r) rows[r] = x_row(min(m0 + r, p.M - 1));
    uint n[COLS];
    for (uint j = 0; j < COLS; ++j) n[j] = min(n0 + 8 * j, p.N - 1);

    float acc[ROWS][COLS];
    for (uint r = 0; r < ROWS; ++r)
        for (uint j = 0; j < COLS; ++j) acc[r][j] = 0.0;

    for (uint k0 = 0; k0 < p.K; k0 += 8) {
        const bool in_k = k0 + lane < p.K;
        const KPos kp = k_pos(min(k0 + lane, p.K - 1));
        float xk[ROWS];  // row r at k0 + lane
        for (uint r = 0; r < ROWS; ++r) {
            const float x = x_at(rows[r], kp);
            xk[r] = in_k ? x : 0.0;
        }
        float wk[COLS][8];
#ifdef SD_WEIGHT8
        // Whole 16-byte texels (a uniform branch: every lane takes the same side).
        if (k0 + 8 <= p.K && (p.w_row_bytes & 15u) == 0u) {
            for (uint j = 0; j < COLS; ++j) load_weight8(n[j], k0, wk[j]);
        } else
#endif
        {
            for (uint j = 0; j < COLS; ++j) weights8(n[j], k0, wk[j]);
        }
        for (uint kk = 0; kk < 8; ++kk) {
            float a[ROWS];
            for (uint r = 0; r < ROWS; ++r) a[r] = subgroupShuffle(xk[r], kk);
            for (uint j = 0; j < COLS; ++j)
                for (uint r = 0; r < ROWS; ++r) acc[r][j] = fma(a[r], wk[j][kk], acc[r][j]);
        }
    }

    for (uint j = 0; j < COLS; ++j) {
        if (n0 + 8 * j >= p.N) continue;
        const float b = p.has_bias != 0 ? bias_at(n[j]) : 0.0;
        for (uint r = 0; r < ROWS; ++r)
            if (m0 + r < p.M) store_y(m0 + r, n[j], acc[r][j] + b);
    }
}
