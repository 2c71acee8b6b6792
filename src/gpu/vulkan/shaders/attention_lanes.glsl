// The body of attention_common.glsl for CPU-class devices (SD_LANES): no shared memory, no
// barrier, operands through texel buffers and the fewest fetches (see gemm_lanes.glsl).
//
// Blocking: each invocation holds its output columns (and for d128 its q row) in registers.
// The keys are walked in tiles of 8: each lane of a subgroup loads key k0 + (its index mod 8)
// of a column of k (and of v), and subgroupShuffle (a uniform index) hands key kk to every lane, so a column
// of a tile costs one load instead of 8. Each lane scores the tile, rescales its running sum
// and output once (online softmax) and adds the tile's weighted v rows. Lanes past lq
// compute query lq-1 and store nothing (every lane of a subgroup takes part in the
// shuffles). Needs subgroups of 8 or more lanes with shuffles (checked by the host).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

void main() {
    const uint bh = gl_WorkGroupID.y;
    const uint b = bh / p.heads, h = bh % p.heads;
    const uint i = gl_WorkGroupID.x * 64 + gl_LocalInvocationID.x;
    const uint iq = min(i, p.lq - 1);
    const uint sub = gl_SubgroupInvocationID % 8;

    const uint cols = min(MAX_DV, p.dv - p.v_col0);
    float acc[MAX_DV];
    for (uint c = 0; c < cols; ++c) acc[c] = 0.0;
    const uint qbase = p.q_offset + b * p.q_strides.x + h * p.q_strides.y + iq * p.q_strides.z;
#ifdef Q_IN_REGISTERS
    float qrow[MAX_D];
    for (uint c = 0; c < p.d; ++c) qrow[c] = q_at(qbase + c * p.q_strides.w) * p.scale;
#endif
    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    // Causal: query i sees keys up to i + (lk - lq).
    const uint last_key =
        p.causal != 0 ? min(p.lk, iq + 1 + (p.lk > p.lq ? p.lk - p.lq : 0)) : p.lk;
    const uint kbase = p.k_offset + b * p.k_strides.x + h * p.k_strides.y;
    const uint vbase = p.v_offset + b * p.v_strides.x + h * p.v_strides.y;
    const uint mbase = p.mask_offset + b * p.mask_strides.x + h * p.mask_strides.y +
                       iq * p.mask_strides.z;

    for (uint j0 = 0; j0 < p.lk; j0 += 8) {
        const uint mine = min(j0 + sub, p.lk - 1);  // the key this lane loads
        const uint krow = kbase + mine * p.k_strides.z;
        float s[8];
        for (uint kk = 0; kk < 8; ++kk) s[kk] = 0.0;
        for (uint c = 0; c < p.d; ++c) {
            const float kc = k_at(krow + c * p.k_strides.w);
#ifdef Q_IN_REGISTERS
            const float qc = qrow[c];
#else
            const float qc = q_at(qbase + c * p.q_strides.w) * p.scale;
#endif
            for (uint kk = 0; kk < 8; ++kk) s[kk] = fma(qc, subgroupShuffle(kc, kk), s[kk]);
        }
        float tile_max = -1.0 / 0.0;
        for (uint kk = 0; kk < 8; ++kk) {
            const uint j = j0 + kk;
            float score = s[kk];
            if (p.has_mask != 0) score += mask_at(mbase + min(j, p.lk - 1) * p.mask_strides.w);
            s[kk] = j < last_key ? score : -1.0 / 0.0;  // last_key <= lk
            tile_max = max(tile_max, s[kk]);
        }
        // Every key so far masked: the weights stay 0 (no exp(-inf - -inf)).
        const float new_max = max(running_max, tile_max);
        const bool any = new_max > -1.0 / 0.0;
        const float correction = any ? exp(running_max - new_max) : 1.0;
        float w[8];
        running_sum *= correction;
        for (uint kk = 0; kk < 8; ++kk) {
            w[kk] = any ? exp(s[kk] - new_max) : 0.0;
            running_sum += w[kk];
        }
        const uint vrow = vbase + mine * p.v_strides.z;
        for (uint c = 0; c < cols; ++c) {
            const float vc = v_at(vrow + (p.v_col0 + c) * p.v_strides.w);
            float a = acc[c] * correction;
            for (uint kk = 0; kk < 8; ++kk) a = fma(w[kk], subgroupShuffle(vc, kk), a);
            acc[c] = a;
        }
        running_max = new_max;
    }
    if (i >= p.lq) return;
    const float inv = running_sum > 0.0 ? 1.0 / running_sum : 0.0;
    const uint obase = (bh * p.lq + i) * p.dv;
    for (uint c = 0; c < cols; ++c) o[obase + p.v_col0 + c] = acc[c] * inv;
}
