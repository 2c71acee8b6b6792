#include "nn/dit_blocks.h"

namespace sd {

namespace {
constexpr float kNormEps = 1e-6f;
}

Tensor modulated_norm(const Tensor& x, const Tensor& mod, int64_t i, int64_t hidden) {
    const Tensor shift = mod.narrow(1, i * hidden, hidden).view({hidden});
    const Tensor scale = add_scalar(mod.narrow(1, (i + 1) * hidden, hidden), 1.0f).view({hidden});
    return layer_norm(x, scale, shift, kNormEps);
}

Tensor gated(const Tensor& x, const Tensor& y, const Tensor& mod, int64_t i, int64_t hidden) {
    return x + y * mod.narrow(1, i * hidden, hidden).view({1, 1, hidden});
}

Tensor head_view(const Tensor& qkv, int i, int64_t heads, int64_t head_dim) {
    const int64_t L = qkv.size(1), row = qkv.stride(1);
    return qkv.as_strided({1, L, heads, head_dim}, {L * row, row, head_dim, 1},
                          qkv.offset() + i * heads * head_dim);
}

Tensor dit_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& rope) {
    AttentionOptions options;
    options.rope = rope;
    const std::vector<int> heads_first = {0, 2, 1, 3};
    Tensor out = scaled_dot_product_attention(q.permute(heads_first), k.permute(heads_first),
                                              v.permute(heads_first), {}, options);
    return permute_copy(out, heads_first).view({1, q.size(1), q.size(2) * q.size(3)});
}

}  // namespace sd
