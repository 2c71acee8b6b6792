// Normalisations over contiguous rows, one workgroup a row: layer / group norm (mean and
// biased variance, two passes), RMS norm, softmax (max, then the sum of exponentials).
// A group norm's row is one (batch, group): cpg channels of `spatial` elements, so element e
// of row r has channel (r % groups) * cpg + e / spatial; a layer norm has spatial 1, groups 1.
//
// Reduction: each of the 256 invocations walks the row with stride 256 accumulating in f32,
// then a tree in shared memory.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float weight[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint rows;
    uint row_len;
    uint spatial;  // elements of one channel within a row
    uint groups;   // rows of one batch item (group norm), else 1
    uint mode;
    float eps;
    uint has_weight;
    uint has_bias;
    uint silu;
} p;

const uint MEAN_VAR = 0, RMS = 1, SOFTMAX = 2;

shared float partial[256];

float reduce_sum(float v) {
    const uint t = gl_LocalInvocationID.x;
    partial[t] = v;
    barrier();
    for (uint s = 128; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        barrier();
    }
    const float total = partial[0];
    barrier();
    return total;
}

float reduce_max(float v) {
    const uint t = gl_LocalInvocationID.x;
    partial[t] = v;
    barrier();
    for (uint s = 128; s > 0; s >>= 1) {
        if (t < s) partial[t] = max(partial[t], partial[t + s]);
        barrier();
    }
    const float total = partial[0];
    barrier();
    return total;
}

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.rows) return;  // the whole workgroup leaves together
    const uint t = gl_LocalInvocationID.x;
    const uint base = row * p.row_len;
    const float n = float(p.row_len);

    if (p.mode == SOFTMAX) {
        float m = -1.0 / 0.0;
        for (uint e = t; e < p.row_len; e += 256) m = max(m, x[base + e]);
        m = reduce_max(m);
        float s = 0.0;
        for (uint e = t; e < p.row_len; e += 256) s += exp(x[base + e] - m);
        s = reduce_sum(s);
        for (uint e = t; e < p.row_len; e += 256) y[base + e] = exp(x[base + e] - m) / s;
        return;
    }

    float mean = 0.0;
    if (p.mode == MEAN_VAR) {
        float s = 0.0;
        for (uint e = t; e < p.row_len; e += 256) s += x[base + e];
        mean = reduce_sum(s) / n;
    }
    float s2 = 0.0;
    for (uint e = t; e < p.row_len; e += 256) {
        const float d = x[base + e] - mean;
        s2 += d * d;
    }
    const float rstd = inversesqrt(reduce_sum(s2) / n + p.eps);
    const uint c0 = (row % p.groups) * (p.row_len / p.spatial);
    for (uint e = t; e < p.row_len; e += 256) {
        const uint c = c0 + e / p.spatial;
        float v = (x[base + e] - mean) * rstd;
        if (p.has_weight != 0) v *= weight[c];
        if (p.has_bias != 0) v += bias[c];
        if (p.silu != 0) v = v / (1.0 + exp(-v));
        y[base + e] = v;
    }
}
