// Reference scaled dot-product attention: the specification the kernels are tested against.
// Plain loops over logical indices, any strides, one thread. Per query row the scores are
// materialised in double, softmax-ed (max subtracted) and the values summed in double.
// A row whose keys are all masked (-inf) gets zeros (torch returns NaN there).

#include <cmath>
#include <limits>
#include <vector>

#include "ops/attention.h"
#include "ops/cpu/attention_kernels.h"

namespace sd::ref {

namespace {

// x [B, H, L, D] with each row's pairs rotated by rope [>= L, D/2, 2] (cos, sin).
Tensor rotated(const Tensor& x, const Tensor& rope) {
    std::vector<float> v = x.to_vector();
    const std::vector<float> cs = rope.to_vector();
    const int64_t rows = x.size(0) * x.size(1), L = x.size(2), D = x.size(3);
    for (int64_t r = 0; r < rows * L; ++r) {
        const float* c = cs.data() + (r % L) * D;
        float* row = v.data() + r * D;
        for (int64_t p = 0; p < D / 2; ++p) {
            const double x0 = row[2 * p], x1 = row[2 * p + 1];
            row[2 * p] = static_cast<float>(c[2 * p] * x0 - c[2 * p + 1] * x1);
            row[2 * p + 1] = static_cast<float>(c[2 * p + 1] * x0 + c[2 * p] * x1);
        }
    }
    return Tensor::from_vector(x.shape(), v);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v,
                                    const Tensor& mask, const AttentionOptions& options) {
    attn::check_attention(q_in, k_in, v, mask, options);
    const bool rope = options.rope.defined();
    const Tensor q = rope ? rotated(q_in, options.rope) : q_in;
    const Tensor k = rope ? rotated(k_in, options.rope) : k_in;
    const attn::AttentionDims dims = attn::check_attention(q, k, v, mask, options);
    Tensor out = Tensor::zeros({dims.batch, dims.heads, dims.lq, dims.dv});
    if (out.numel() == 0) return out;

    const float* qp = static_cast<const float*>(q.data_ptr());
    const float* kp = static_cast<const float*>(k.data_ptr());
    const float* vp = static_cast<const float*>(v.data_ptr());
    const float* mp = mask.defined() ? static_cast<const float*>(mask.data_ptr()) : nullptr;
    float* op = out.data<float>();
    const double scale = dims.scale;
    const double neg_inf = -std::numeric_limits<double>::infinity();
    std::vector<double> s(static_cast<size_t>(dims.lk));
    std::vector<double> acc(static_cast<size_t>(dims.dv));

    for (int64_t b = 0; b < dims.batch; ++b) {
        for (int64_t h = 0; h < dims.heads; ++h) {
            for (int64_t i = 0; i < dims.lq; ++i) {
                const float* qrow = qp + b * q.stride(0) + h * q.stride(1) + i * q.stride(2);
                double smax = neg_inf;
                for (int64_t j = 0; j < dims.lk; ++j) {
                    double score;
                    if (dims.causal && j > i + dims.causal_offset) {
                        score = neg_inf;
                    } else {
                        const float* krow =
                            kp + b * k.stride(0) + h * k.stride(1) + j * k.stride(2);
                        double dot = 0.0;
                        for (int64_t c = 0; c < dims.d; ++c) {
                            dot +=
                                static_cast<double>(qrow[c * q.stride(3)]) * krow[c * k.stride(3)];
                        }
                        score = dot * scale;
                        if (mp) {
                            score += mp[b * dims.mask_strides[0] + h * dims.mask_strides[1] +
                                        i * dims.mask_strides[2] + j * dims.mask_strides[3]];
                        }
                    }
                    s[j] = score;
                    if (score > smax) smax = score;
                }
                float* orow = op + ((b * dims.heads + h) * dims.lq + i) * dims.dv;
                if (smax == neg_inf) continue;  // every key masked: zeros
                double sum = 0.0;
                for (int64_t j = 0; j < dims.lk; ++j) {
                    s[j] = std::exp(s[j] - smax);
                    sum += s[j];
                }
                for (double& a : acc) a = 0.0;
                for (int64_t j = 0; j < dims.lk; ++j) {
                    if (s[j] == 0.0) continue;
                    const float* vrow = vp + b * v.stride(0) + h * v.stride(1) + j * v.stride(2);
                    for (int64_t c = 0; c < dims.dv; ++c) acc[c] += s[j] * vrow[c * v.stride(3)];
                }
                for (int64_t c = 0; c < dims.dv; ++c) orow[c] = static_cast<float>(acc[c] / sum);
            }
        }
    }
    return out;
}

}  // namespace sd::ref
