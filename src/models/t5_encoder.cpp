#include "models/t5_encoder.h"

#include <cmath>

#include "base/error.h"
#include "base/log.h"
#include "ops/norm.h"

namespace sd {
namespace {

T5Config read_config(const Weights& w) {
    T5Config c;
    const std::string bias_name =
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight";
    auto shared = w.shape_of("shared.weight");
    if (!shared) shared = w.shape_of("encoder.embed_tokens.weight");
    auto bias = w.shape_of(bias_name);
    auto q = w.shape_of("encoder.block.0.layer.0.SelfAttention.q.weight");
    auto wi = w.shape_of("encoder.block.0.layer.1.DenseReluDense.wi_0.weight");
    SD_CHECK(shared && bias && q && wi,
             "no T5 encoder under '%s' (it needs shared.weight, encoder.block.0.layer.0."
             "SelfAttention.{q,relative_attention_bias}.weight and encoder.block.0.layer.1."
             "DenseReluDense.wi_0.weight; is the file given as --t5xxl a T5 text encoder?)",
             w.prefix().c_str());
    SD_CHECK(shared->size() == 2 && bias->size() == 2 && q->size() == 2 && wi->size() == 2,
             "T5 encoder under '%s': shared %s, relative_attention_bias %s, q %s, wi_0 %s are "
             "not all matrices",
             w.prefix().c_str(), shared->to_string().c_str(), bias->to_string().c_str(),
             q->to_string().c_str(), wi->to_string().c_str());
    c.vocab = (*shared)[0];
    c.width = (*shared)[1];
    c.buckets = (*bias)[0];
    c.heads = (*bias)[1];
    SD_CHECK(c.heads > 0 && (*q)[0] % c.heads == 0 && c.buckets >= 2,
             "T5 encoder: '%s%s' %s does not give buckets x heads that divide q's %lld outputs",
             w.prefix().c_str(), bias_name.c_str(), bias->to_string().c_str(), (long long)(*q)[0]);
    c.head_dim = (*q)[0] / c.heads;
    c.ffn = (*wi)[0];
    c.layers = 0;
    while (w.has("encoder.block." + std::to_string(c.layers) + ".layer.0.SelfAttention.q.weight"))
        ++c.layers;
    return c;
}

}  // namespace

int32_t t5_relative_position_bucket(int64_t relative_position, int64_t buckets,
                                    int64_t max_distance) {
    const int64_t half = buckets / 2;
    const int64_t base = relative_position > 0 ? half : 0;
    const int64_t distance = relative_position < 0 ? -relative_position : relative_position;
    const int64_t max_exact = half / 2;
    if (distance < max_exact) return static_cast<int32_t>(base + distance);
    // In float, as transformers (a float32 tensor) and stable-diffusion.cpp compute it.
    const float log_ratio =
        std::log(static_cast<float>(distance) / static_cast<float>(max_exact)) /
        std::log(static_cast<float>(max_distance) / static_cast<float>(max_exact));
    const auto large =
        max_exact + static_cast<int64_t>(log_ratio * static_cast<float>(half - max_exact));
    return static_cast<int32_t>(base + std::min(large, half - 1));
}

T5Encoder T5Encoder::load(const Weights& w) {
    T5Encoder m;
    m.config_ = read_config(w);
    const T5Config& c = m.config_;
    const int64_t inner = c.heads * c.head_dim;
    // T5EncoderModel's state dict may also hold encoder.embed_tokens.weight, tied to shared.
    const Tensor tied = w.get_optional("encoder.embed_tokens.weight", {c.vocab, c.width});
    m.shared_ = w.has("shared.weight") || !tied.defined()
                    ? w.get("shared.weight", {c.vocab, c.width})
                    : tied;
    Weights enc = w["encoder"];
    // Read in every attention of every block: kept in f32.
    auto bias_table = [&](int64_t i) {
        return convert(enc["block"][static_cast<int>(i)]["layer"][0]["SelfAttention"]
                          ["relative_attention_bias"]
                              .get("weight", {c.buckets, c.heads}),
                       DType::F32);
    };
    const bool umt5 = c.layers > 1 &&
                      w.has("encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight");
    if (!umt5) m.relative_attention_bias_ = bias_table(0);
    for (int64_t i = 0; i < c.layers; ++i) {
        Weights attn = enc["block"][static_cast<int>(i)]["layer"][0];
        Weights ff = enc["block"][static_cast<int>(i)]["layer"][1];
        T5Block b;
        if (umt5) b.relative_attention_bias = bias_table(i);
        b.attn_norm = attn["layer_norm"].get("weight", {c.width});
        b.q = Linear::load(attn["SelfAttention"]["q"], c.width, inner, /*bias=*/false);
        b.k = Linear::load(attn["SelfAttention"]["k"], c.width, inner, false);
        b.v = Linear::load(attn["SelfAttention"]["v"], c.width, inner, false);
        b.o = Linear::load(attn["SelfAttention"]["o"], inner, c.width, false);
        b.ffn_norm = ff["layer_norm"].get("weight", {c.width});
        b.wi_0 = Linear::load(ff["DenseReluDense"]["wi_0"], c.width, c.ffn, false);
        b.wi_1 = Linear::load(ff["DenseReluDense"]["wi_1"], c.width, c.ffn, false);
        b.wo = Linear::load(ff["DenseReluDense"]["wo"], c.ffn, c.width, false);
        m.blocks_.push_back(std::move(b));
    }
    m.final_norm_ = enc["final_layer_norm"].get("weight", {c.width});
    w.check("T5 encoder");
    m.pages_ = w.pages();
    SD_LOG_INFO(
        "%s encoder: %lld blocks, width %lld, %lld heads x %lld, feed-forward %lld, "
        "%lld position buckets",
        umt5 ? "UMT5" : "T5", (long long)c.layers, (long long)c.width, (long long)c.heads,
        (long long)c.head_dim, (long long)c.ffn, (long long)c.buckets);
    return m;
}

Tensor T5Encoder::position_bias(const Tensor& bias_table, int64_t n,
                                std::span<const float> key_mask) const {
    const int64_t h = config_.heads;
    Tensor bias = Tensor::empty({1, h, n, n});
    float* out = bias.data<float>();
    const float* table = bias_table.data<float>();
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            const int32_t bucket =
                t5_relative_position_bucket(j - i, config_.buckets, config_.max_distance);
            const float m = key_mask.empty() ? 0.0f : key_mask[static_cast<size_t>(j)];
            for (int64_t head = 0; head < h; ++head)
                out[(head * n + i) * n + j] = table[bucket * h + head] + m;
        }
    }
    return bias;
}

Tensor T5Encoder::block(const T5Block& b, const Tensor& x, const Tensor& bias) const {
    const int64_t n = x.size(1), h = config_.heads, d = config_.head_dim;
    Tensor normed = rms_norm(x, b.attn_norm, config_.eps);
    auto heads = [&](const Tensor& t) {  // [1, n, H*D] -> [1, H, n, D] (a view)
        return t.view({1, n, h, d}).permute({0, 2, 1, 3});
    };
    AttentionOptions options;
    options.scale = 1.0f;  // T5 folds 1/sqrt(d) into its weights
    Tensor attn =
        scaled_dot_product_attention(heads(b.q.forward(normed)), heads(b.k.forward(normed)),
                                     heads(b.v.forward(normed)), bias, options);
    attn = permute_copy(attn, {0, 2, 1, 3}).view({1, n, h * d});
    Tensor r = x + b.o.forward(attn);
    normed = rms_norm(r, b.ffn_norm, config_.eps);
    Tensor gated = gelu(b.wi_0.forward(normed), GeluApprox::Tanh) * b.wi_1.forward(normed);
    return r + b.wo.forward(gated);
}

Tensor T5Encoder::forward(std::span<const int32_t> ids, std::span<const float> key_mask) const {
    SD_CHECK(!ids.empty(), "T5 encoder: no token ids");
    SD_CHECK(key_mask.empty() || key_mask.size() == ids.size(),
             "T5 encoder: a mask of %zu values for %zu ids", key_mask.size(), ids.size());
    const auto n = static_cast<int64_t>(ids.size());
    Tensor tokens = Tensor::empty({1, n}, DType::I32);
    std::copy(ids.begin(), ids.end(), tokens.data<int32_t>());
    Tensor x = embedding(shared_, tokens);  // [1, n, width]
    if (per_block_position_bias()) {
        for (const T5Block& b : blocks_)
            x = block(b, x, position_bias(b.relative_attention_bias, n, key_mask));
    } else {
        const Tensor bias = position_bias(relative_attention_bias_, n, key_mask);
        for (const T5Block& b : blocks_) x = block(b, x, bias);
    }
    return rms_norm(x, final_norm_, config_.eps);
}

}  // namespace sd
