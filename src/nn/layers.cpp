#include "nn/layers.h"

#include <cmath>

#include "base/error.h"
#include "io/imatrix.h"
#include "nn/weight_patch.h"

namespace sd {

Linear Linear::load(const Weights& w, int64_t in, int64_t out, bool bias) {
    Linear l;
    l.weight = w.get("weight", {out, in});
    if (bias) l.bias = w.get("bias", {out});
    l.streamed = w.residency() == Residency::Streamed;
    l.name = w.prefix() + "weight";
    return l;
}

Tensor Linear::forward(const Tensor& x) const {
    if (imatrix::collecting()) [[unlikely]]
        imatrix::record_linear(name, x);
    if (const LayerPatch* patch = active_patch(name)) [[unlikely]] {
        if (!streamed || patch->weight.defined()) return patched_linear(*patch, x, weight, bias);
        Tensor y = patched_linear(*patch, x, read_streamed(weight), bias);
        weight.storage()->release_pages();
        return y;
    }
    if (!streamed) return linear(x, weight, bias);
    Tensor y = linear(x, read_streamed(weight), bias);
    weight.storage()->release_pages();  // in case it was used in place
    return y;
}

Conv2d Conv2d::load(const Weights& w, int64_t in, int64_t out, int kernel, int stride, int padding,
                    bool bias) {
    Conv2d c;
    c.weight = w.get("weight", {out, in, kernel, kernel});
    if (bias) c.bias = w.get("bias", {out});
    if (padding < 0) padding = kernel / 2;
    c.options.stride_h = c.options.stride_w = stride;
    c.options.pad_h = c.options.pad_w = padding;
    c.streamed = w.residency() == Residency::Streamed;
    c.name = w.prefix() + "weight";
    return c;
}

Tensor Conv2d::forward(const Tensor& x) const {
    if (imatrix::collecting()) [[unlikely]]
        imatrix::record_conv2d(name, x, options, weight.size(2), weight.size(3));
    if (const LayerPatch* patch = active_patch(name)) [[unlikely]] {
        if (!streamed || patch->weight.defined())
            return patched_conv2d(*patch, x, weight, bias, options);
        Tensor y = patched_conv2d(*patch, x, read_streamed(weight), bias, options);
        weight.storage()->release_pages();
        return y;
    }
    if (!streamed) return conv2d(x, weight, bias, options);
    Tensor y = conv2d(x, read_streamed(weight), bias, options);
    weight.storage()->release_pages();
    return y;
}

Tensor Conv2d::forward_add(const Tensor& x, const Tensor& residual) const {
    if (imatrix::collecting() || active_patch(name)) [[unlikely]] {
        Conv2d plain = *this;  // forward's patch and statistics paths, the sum after them
        plain.options.leaky_relu = false;
        const Tensor y = plain.forward(x) + residual;
        if (!options.leaky_relu) return y;
        return clamp(y, 0.0f, INFINITY) + clamp(y, -INFINITY, 0.0f) * options.negative_slope;
    }
    if (!streamed) return conv2d_add(x, weight, bias, options, residual);
    Tensor y = conv2d_add(x, read_streamed(weight), bias, options, residual);
    weight.storage()->release_pages();
    return y;
}

void Conv2d::forward_into(const Tensor& x, const Tensor& out) const {
    if (imatrix::collecting()) [[unlikely]]
        imatrix::record_conv2d(name, x, options, weight.size(2), weight.size(3));
    if (!streamed) return conv2d_into(x, weight, bias, options, out);
    conv2d_into(x, read_streamed(weight), bias, options, out);
    weight.storage()->release_pages();
}

GroupNorm GroupNorm::load(const Weights& w, int64_t groups, int64_t channels, float eps) {
    GroupNorm g;
    g.weight = w.get("weight", {channels});
    g.bias = w.get("bias", {channels});
    g.groups = groups;
    g.eps = eps;
    return g;
}

LayerNorm LayerNorm::load(const Weights& w, int64_t dim, float eps) {
    LayerNorm l;
    l.weight = w.get("weight", {dim});
    l.bias = w.get("bias", {dim});
    l.eps = eps;
    return l;
}

Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                            const Tensor& mask, bool causal) {
    SD_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3,
             "attention inputs must be [B, L, C]: %s %s %s", q.describe().c_str(),
             k.describe().c_str(), v.describe().c_str());
    SD_CHECK(heads > 0 && q.size(2) % heads == 0 && v.size(2) % heads == 0,
             "attention: %lld heads do not divide the width of %s", static_cast<long long>(heads),
             q.describe().c_str());
    auto split = [heads](const Tensor& t) {  // [B, L, H*D] -> [B, H, L, D]
        return t.view({t.size(0), t.size(1), heads, t.size(2) / heads}).permute({0, 2, 1, 3});
    };
    AttentionOptions options;
    options.causal = causal;
    Tensor out = scaled_dot_product_attention(split(q.contiguous()), split(k.contiguous()),
                                              split(v.contiguous()), mask, options);
    // [B, H, Lq, Dv] -> [B, Lq, H*Dv]
    return permute_copy(out, {0, 2, 1, 3}).view({q.size(0), q.size(1), v.size(2)});
}

}  // namespace sd
