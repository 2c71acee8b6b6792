#include "models/mmdit.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/log.h"
#include "nn/dit_blocks.h"
#include "ops/convert.h"

namespace sd {
namespace {

constexpr float kNormEps = 1e-6f;
constexpr int64_t kTimeEmbedding = 256;

int64_t dim_of(const Weights& w, const std::string& name, int d) {
    return w.dim_of(name, d, "MMDiT");
}

MMDiTConfig read_config(const Weights& w) {
    SD_CHECK(w.has("x_embedder.proj.weight"), "no MMDiT under '%s' (no x_embedder.proj.weight)",
             w.prefix().c_str());
    MMDiTConfig c;
    c.hidden = dim_of(w, "x_embedder.proj.weight", 0);
    c.in_channels = dim_of(w, "x_embedder.proj.weight", 1);
    c.patch = dim_of(w, "x_embedder.proj.weight", 2);
    c.context_dim = dim_of(w, "context_embedder.weight", 1);
    c.adm_dim = dim_of(w, "y_embedder.mlp.0.weight", 1);
    c.out_channels = dim_of(w, "final_layer.linear.weight", 0) / (c.patch * c.patch);
    const int64_t positions = dim_of(w, "pos_embed", 1);
    c.pos_embed_max = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(positions))));
    SD_CHECK(c.pos_embed_max * c.pos_embed_max == positions,
             "MMDiT: pos_embed holds %lld positions, not a square grid", (long long)positions);
    c.depth = 0;
    while (w.has("joint_blocks." + std::to_string(c.depth) + ".x_block.attn.qkv.weight")) ++c.depth;
    SD_CHECK(c.depth > 0 && c.hidden % c.depth == 0,
             "MMDiT: %d joint blocks do not divide the width %lld into heads", c.depth,
             (long long)c.hidden);
    c.heads = c.depth;  // as the reference: width 64 per block, one head per block
    c.head_dim = c.hidden / c.heads;
    c.mlp_hidden = dim_of(w, "joint_blocks.0.x_block.mlp.fc1.weight", 0);
    c.qk_norm = w.has("joint_blocks.0.x_block.attn.ln_q.weight");
    for (int i = 0; i < c.depth; ++i)
        c.dual_attention_blocks +=
            w.has("joint_blocks." + std::to_string(i) + ".x_block.attn2.qkv.weight");
    return c;
}

MMDiTAttention load_attention(const Weights& w, const MMDiTConfig& c, bool pre_only) {
    MMDiTAttention a;
    a.qkv = Linear::load(w["qkv"], c.hidden, 3 * c.hidden);
    if (!pre_only) a.proj = Linear::load(w["proj"], c.hidden, c.hidden);
    if (c.qk_norm) {
        a.ln_q = convert(w.get("ln_q.weight", {c.head_dim}), DType::F32);
        a.ln_k = convert(w.get("ln_k.weight", {c.head_dim}), DType::F32);
    }
    return a;
}

MMDiTStream load_stream(const Weights& w, const MMDiTConfig& c, bool pre_only) {
    MMDiTStream s;
    s.pre_only = pre_only;
    const bool dual = w.has("attn2.qkv.weight");
    s.adaln = Linear::load(w["adaLN_modulation"]["1"], c.hidden,
                           (pre_only ? 2
                            : dual   ? 9
                                     : 6) *
                               c.hidden);
    s.attn = load_attention(w["attn"], c, pre_only);
    if (dual) s.attn2 = load_attention(w["attn2"], c, false);
    if (!pre_only) {
        s.fc1 = Linear::load(w["mlp"]["fc1"], c.hidden, c.mlp_hidden);
        s.fc2 = Linear::load(w["mlp"]["fc2"], c.mlp_hidden, c.hidden);
    }
    return s;
}

MlpEmbedder load_mlp_embedder(const Weights& w, int64_t in, int64_t hidden) {
    return {Linear::load(w["mlp"]["0"], in, hidden), Linear::load(w["mlp"]["2"], hidden, hidden)};
}

}  // namespace

MMDiT MMDiT::load(const Weights& w) {
    MMDiT m;
    m.config_ = read_config(w);
    const MMDiTConfig& c = m.config_;
    const int64_t C = c.hidden;
    m.x_embedder = Conv2d::load(w["x_embedder"]["proj"], c.in_channels, C,
                                static_cast<int>(c.patch), static_cast<int>(c.patch), 0);
    m.pos_embed = w.get("pos_embed", {1, c.pos_embed_max * c.pos_embed_max, C});
    m.t_embedder = load_mlp_embedder(w["t_embedder"], kTimeEmbedding, C);
    m.y_embedder = load_mlp_embedder(w["y_embedder"], c.adm_dim, C);
    m.context_embedder = Linear::load(w["context_embedder"], c.context_dim, C);
    for (int i = 0; i < c.depth; ++i) {
        const Weights b = w["joint_blocks"][i];
        MMDiTJointBlock j;
        j.context = load_stream(b["context_block"], c, i == c.depth - 1);
        j.x = load_stream(b["x_block"], c, false);
        m.blocks_.push_back(std::move(j));
    }
    m.final_adaln = Linear::load(w["final_layer"]["adaLN_modulation"]["1"], C, 2 * C);
    m.final_linear =
        Linear::load(w["final_layer"]["linear"], C, c.patch * c.patch * c.out_channels);
    w.check("MMDiT");
    m.pages_ = w.pages();
    SD_LOG_INFO("MMDiT: %d joint blocks, width %lld (%lld heads), positions %lldx%lld%s%s", c.depth,
                (long long)C, (long long)c.heads, (long long)c.pos_embed_max,
                (long long)c.pos_embed_max, c.qk_norm ? ", RMS qk-norm" : "",
                c.dual_attention_blocks ? ", MMDiT-X dual attention" : "");
    return m;
}

// Part `part` of a fused qkv as heads [1, L, H, D], RMS-normed when the model has qk-norm.
Tensor MMDiT::qk(const Tensor& qkv, int part, const Tensor& norm) const {
    const Tensor h = head_view(qkv, part, config_.heads, config_.head_dim);
    return norm.defined() ? rms_norm(h, norm, kNormEps) : h;
}

void MMDiT::joint_block(const MMDiTJointBlock& b, Tensor& context, Tensor& x,
                        const Tensor& c) const {
    const int64_t C = config_.hidden, H = config_.heads, D = config_.head_dim;
    const Tensor cm = b.context.adaln.forward(c), xm = b.x.adaln.forward(c);
    const Tensor cqkv = b.context.attn.qkv.forward(modulated_norm(context, cm, 0, C));
    const Tensor xqkv = b.x.attn.qkv.forward(modulated_norm(x, xm, 0, C));
    // Text tokens first, then the image's, each stream with its own qk-norm.
    const Tensor q = concat({qk(cqkv, 0, b.context.attn.ln_q), qk(xqkv, 0, b.x.attn.ln_q)}, 1);
    const Tensor k = concat({qk(cqkv, 1, b.context.attn.ln_k), qk(xqkv, 1, b.x.attn.ln_k)}, 1);
    const Tensor v = concat({head_view(cqkv, 2, H, D), head_view(xqkv, 2, H, D)}, 1);
    const Tensor attn = dit_attention(q, k, v);
    const int64_t lc = context.size(1), lx = x.size(1);
    Tensor x_attn2;
    if (b.x.attn2) {  // MMDiT-X: the image tokens attend to themselves with chunks 6..8
        const MMDiTAttention& a2 = *b.x.attn2;
        const Tensor qkv2 = a2.qkv.forward(modulated_norm(x, xm, 6, C));
        x_attn2 = a2.proj.forward(
            dit_attention(qk(qkv2, 0, a2.ln_q), qk(qkv2, 1, a2.ln_k), head_view(qkv2, 2, H, D)));
    }
    auto mlp = [&](const MMDiTStream& s, const Tensor& t, const Tensor& mod) {
        return s.fc2.forward(gelu(s.fc1.forward(modulated_norm(t, mod, 3, C)), GeluApprox::Tanh));
    };
    x = gated(x, b.x.attn.proj.forward(attn.narrow(1, lc, lx)), xm, 2, C);
    if (b.x.attn2) x = gated(x, x_attn2, xm, 8, C);
    x = gated(x, mlp(b.x, x, xm), xm, 5, C);
    if (b.context.pre_only) {
        context = Tensor();
        return;
    }
    context = gated(context, b.context.attn.proj.forward(attn.narrow(1, 0, lc)), cm, 2, C);
    context = gated(context, mlp(b.context, context, cm), cm, 5, C);
}

Tensor MMDiT::cropped_pos_embed(int64_t h, int64_t w) const {
    const int64_t M = config_.pos_embed_max, C = config_.hidden;
    SD_CHECK(h > 0 && w > 0 && h <= M && w <= M,
             "MMDiT: a latent of %lldx%lld patches exceeds the position grid of %lldx%lld",
             (long long)h, (long long)w, (long long)M, (long long)M);
    const int64_t top = (M - h) / 2, left = (M - w) / 2;
    // The rows first (one contiguous run, converted from the file's dtype), then the columns.
    const Tensor rows = convert(pos_embed.view({M, M, C}).narrow(0, top, h), DType::F32);
    return rows.narrow(1, left, w).contiguous().view({1, h * w, C});
}

Tensor MMDiT::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                      const Tensor& y, const std::vector<int>& skip_layers) const {
    const MMDiTConfig& c = config_;
    const int64_t p = c.patch;
    SD_CHECK(x.dim() == 4 && x.size(0) == 1 && x.size(1) == c.in_channels && x.size(2) % p == 0 &&
                 x.size(3) % p == 0,
             "MMDiT: latent %s, want [1, %lld, H, W] with H, W multiples of %lld",
             x.describe().c_str(), (long long)c.in_channels, (long long)p);
    SD_CHECK(context.dim() == 3 && context.size(0) == 1 && context.size(2) == c.context_dim,
             "MMDiT: text context %s, want [1, L, %lld]", context.describe().c_str(),
             (long long)c.context_dim);
    SD_CHECK(y.defined() && y.numel() == c.adm_dim, "MMDiT: pooled vector %s, want %lld values",
             y.describe().c_str(), (long long)c.adm_dim);
    const int64_t h = x.size(2) / p, w = x.size(3) / p, C = c.hidden;
    const Tensor patches = x_embedder.forward(x.contiguous());  // [1, C, h, w]
    Tensor img = permute_copy(patches.view({C, h * w}), {1, 0}).view({1, h * w, C}) +
                 cropped_pos_embed(h, w);
    Tensor txt = context_embedder.forward(context);
    const Tensor vec = t_embedder.forward(timestep_embedding(timesteps, kTimeEmbedding)) +
                       y_embedder.forward(y.view({1, c.adm_dim}));
    const Tensor svec = silu(vec);  // every modulation reads SiLU(c)
    for (int i = 0; i < c.depth; ++i) {
        if (std::find(skip_layers.begin(), skip_layers.end(), i) != skip_layers.end()) continue;
        joint_block(blocks_[static_cast<size_t>(i)], txt, img, svec);
    }
    const Tensor mod = final_adaln.forward(svec);  // shift, scale
    const Tensor out = final_linear.forward(modulated_norm(img, mod, 0, C));
    return mmdit_unpatchify(out, c.out_channels, h, w, p);
}

Tensor mmdit_unpatchify(const Tensor& x, int64_t channels, int64_t h, int64_t w, int64_t p) {
    const Tensor v = x.contiguous().view({h, w, p, p, channels});  // batch 1
    return permute_copy(v, {4, 0, 2, 1, 3}).view({1, channels, h * p, w * p});
}

}  // namespace sd
