#include "nn/dit_blocks.h"

namespace sd {

namespace {
constexpr float kNormEps = 1e-6f;
}

Tensor patchify(const Tensor& x, int64_t p, PatchLayout layout) {
    const int64_t ph = (p - x.size(2) % p) % p, pw = (p - x.size(3) % p) % p;
    const Tensor padded = ph || pw ? pad2d(x, 0, pw, 0, ph) : x.contiguous();
    const int64_t C = x.size(1), h = padded.size(2) / p, w = padded.size(3) / p;
    const Tensor v = padded.view({C, h, p, w, p});  // batch 1
    const std::vector<int> order = layout == PatchLayout::ChannelsFirst
                                       ? std::vector<int>{1, 3, 0, 2, 4}
                                       : std::vector<int>{1, 3, 2, 4, 0};
    return permute_copy(v, order).view({1, h * w, C * p * p});
}

Tensor unpatchify(const Tensor& tokens, int64_t channels, int64_t H, int64_t W, int64_t p,
                  PatchLayout layout) {
    const int64_t h = (H + p - 1) / p, w = (W + p - 1) / p;
    const bool first = layout == PatchLayout::ChannelsFirst;
    const Tensor v =
        tokens.contiguous().view(first ? Shape{h, w, channels, p, p} : Shape{h, w, p, p, channels});
    const std::vector<int> order =
        first ? std::vector<int>{2, 0, 3, 1, 4} : std::vector<int>{4, 0, 2, 1, 3};
    const Tensor out = permute_copy(v, order).view({1, channels, h * p, w * p});
    return h * p == H && w * p == W ? out : out.narrow(2, 0, H).narrow(3, 0, W).contiguous();
}

Tensor modulated_norm(const Tensor& x, const Tensor& mod, int64_t i, int64_t hidden) {
    const Tensor shift = mod.narrow(1, i * hidden, hidden).view({hidden});
    const Tensor scale = add_scalar(mod.narrow(1, (i + 1) * hidden, hidden), 1.0f).view({hidden});
    return layer_norm(x, scale, shift, kNormEps);
}

Tensor gated(const Tensor& x, const Tensor& y, const Tensor& mod, int64_t i, int64_t hidden) {
    return x + y * mod.narrow(1, i * hidden, hidden).view({1, 1, hidden});
}

Tensor silu_gated(const Tensor& x) {
    const int64_t n = x.size(-1) / 2;
    const int last = x.dim() - 1;
    return silu(x.narrow(last, 0, n)) * x.narrow(last, n, n);
}

Tensor joint_heads(const Tensor& a_qkv, const Tensor& b_qkv, int i, int64_t heads, int64_t head_dim,
                   const Tensor& a_scale, const Tensor& b_scale) {
    Tensor a = head_view(a_qkv, i, heads, head_dim), b = head_view(b_qkv, i, heads, head_dim);
    if (a_scale.defined()) a = rms_norm(a, a_scale, kNormEps);
    if (b_scale.defined()) b = rms_norm(b, b_scale, kNormEps);
    return concat({a, b}, 1);
}

Tensor head_view(const Tensor& qkv, int i, int64_t heads, int64_t head_dim) {
    const int64_t L = qkv.size(1), row = qkv.stride(1);
    return qkv.as_strided({1, L, heads, head_dim}, {L * row, row, head_dim, 1},
                          qkv.offset() + i * heads * head_dim);
}

Tensor dit_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& rope,
                     const Tensor& mask) {
    AttentionOptions options;
    options.rope = rope;
    const std::vector<int> heads_first = {0, 2, 1, 3};
    Tensor out = scaled_dot_product_attention(q.permute(heads_first), k.permute(heads_first),
                                              v.permute(heads_first), mask, options);
    return permute_copy(out, heads_first).view({1, q.size(1), q.size(2) * q.size(3)});
}

}  // namespace sd
