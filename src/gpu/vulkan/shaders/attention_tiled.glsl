// The body of attention_common.glsl for GPUs.
//
// Blocking: each invocation holds its output columns (and for d128 its q row) in registers.
// The keys are walked in tiles of KEYS rows staged in shared memory by the whole workgroup;
// each invocation scores the tile, takes the tile's maximum, rescales its running sum and
// output once (online softmax) and adds the tile's weighted v rows.
shared float ks[KEYS][MAX_D];
shared float vs[KEYS][MAX_DV];

void main() {
    const uint bh = gl_WorkGroupID.y;
    const uint b = bh / p.heads, h = bh % p.heads;
    const uint i = gl_WorkGroupID.x * 64 + gl_LocalInvocationID.x;
    const bool in_range = i < p.lq;

    const uint cols = min(MAX_DV, p.dv - p.v_col0);
    float acc[MAX_DV];
    const uint qbase = p.q_offset + b * p.q_strides.x + h * p.q_strides.y + i * p.q_strides.z;
#ifdef Q_IN_REGISTERS
    float qrow[MAX_D];
    for (uint c = 0; c < p.d; ++c) qrow[c] = in_range ? q[qbase + c * p.q_strides.w] * p.scale : 0.0;
#endif
    for (uint c = 0; c < cols; ++c) acc[c] = 0.0;
    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    // Causal: query i sees keys up to i + (lk - lq).
    const uint last_key = p.causal != 0 ? min(p.lk, i + 1 + (p.lk > p.lq ? p.lk - p.lq : 0)) : p.lk;
    const uint kbase = p.k_offset + b * p.k_strides.x + h * p.k_strides.y;
    const uint vbase = p.v_offset + b * p.v_strides.x + h * p.v_strides.y;
    const uint mbase = p.mask_offset + b * p.mask_strides.x + h * p.mask_strides.y +
                       i * p.mask_strides.z;

    for (uint j0 = 0; j0 < p.lk; j0 += KEYS) {
        // Stage KEYS rows of k and v (zeros past lk).
        for (uint e = gl_LocalInvocationID.x; e < KEYS * MAX_D; e += 64) {
            const uint r = e / MAX_D, c = e % MAX_D, j = j0 + r;
            ks[r][c] = (j < p.lk && c < p.d) ? k[kbase + j * p.k_strides.z + c * p.k_strides.w] : 0.0;
        }
        for (uint e = gl_LocalInvocationID.x; e < KEYS * MAX_DV; e += 64) {
            const uint r = e / MAX_DV, c = e % MAX_DV, j = j0 + r;
            vs[r][c] = (j < p.lk && c < cols)
                           ? v[vbase + j * p.v_strides.z + (p.v_col0 + c) * p.v_strides.w]
                           : 0.0;
        }
        barrier();
        if (in_range) {
            float s[KEYS];
            float tile_max = -1.0 / 0.0;
            for (uint r = 0; r < KEYS; ++r) {
                const uint j = j0 + r;
                float score = -1.0 / 0.0;
                if (j < last_key) {
                    score = 0.0;
#ifdef Q_IN_REGISTERS
                    for (uint c = 0; c < p.d; ++c) score = fma(qrow[c], ks[r][c], score);
#else
                    for (uint c = 0; c < p.d; ++c)
                        score = fma(q[qbase + c * p.q_strides.w], ks[r][c], score);
                    score *= p.scale;
#endif
                    if (p.has_mask != 0) score += mask[mbase + j * p.mask_strides.w];
                }
                s[r] = score;
                tile_max = max(tile_max, score);
            }
            if (tile_max > -1.0 / 0.0) {  // else every key of the tile is masked
                const float new_max = max(running_max, tile_max);
                const float correction = exp(running_max - new_max);  // 0 on the first tile
                running_sum *= correction;
                for (uint c = 0; c < cols; ++c) acc[c] *= correction;
                for (uint r = 0; r < KEYS; ++r) {
                    const float w = exp(s[r] - new_max);
                    running_sum += w;
                    for (uint c = 0; c < cols; ++c) acc[c] = fma(w, vs[r][c], acc[c]);
                }
                running_max = new_max;
            }
        }
        barrier();
    }
    if (!in_range) return;
    const float inv = running_sum > 0.0 ? 1.0 / running_sum : 0.0;
    const uint obase = (bh * p.lq + i) * p.dv;
    for (uint c = 0; c < cols; ++c) o[obase + p.v_col0 + c] = acc[c] * inv;
}
