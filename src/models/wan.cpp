#include "models/wan.h"

#include <numeric>

#include "base/error.h"
#include "base/log.h"
#include "nn/dit_blocks.h"
#include "nn/rope.h"
#include "ops/convert.h"

namespace sd {
namespace {

constexpr int64_t kPatch = 2;  // 1 x 2 x 2: frames are not merged

int64_t dim_of(const Weights& w, const std::string& name, int d) {
    return w.dim_of(name, d, "Wan");
}

WanConfig read_config(const Weights& w) {
    SD_CHECK(w.has("patch_embedding.weight") && w.has("blocks.0.self_attn.q.weight"),
             "no Wan model under '%s' (no patch_embedding / blocks.0.self_attn)",
             w.prefix().c_str());
    SD_CHECK(!w.has("img_emb.proj.0.weight") && !w.has("img_emb.proj.1.weight"),
             "this Wan model is an image-to-video one (img_emb: it reads a CLIP-vision image "
             "embedding and a first frame); this build runs Wan text-to-video models");
    WanConfig c;
    c.dim = dim_of(w, "patch_embedding.weight", 0);
    c.in_channels = dim_of(w, "patch_embedding.weight", 1);
    c.ffn = dim_of(w, "blocks.0.ffn.0.weight", 0);
    c.text_dim = dim_of(w, "text_embedding.0.weight", 1);
    c.freq_dim = dim_of(w, "time_embedding.0.weight", 1);
    c.out_channels = dim_of(w, "head.head.weight", 0) / (kPatch * kPatch);
    c.layers = w.count_numbered("blocks", "self_attn.q.weight");
    SD_CHECK(c.dim % c.head_dim == 0, "Wan: width %lld is not a whole number of %lld-wide heads",
             (long long)c.dim, (long long)c.head_dim);
    c.heads = c.dim / c.head_dim;
    SD_CHECK(std::accumulate(c.axes_dim.begin(), c.axes_dim.end(), 0) == c.head_dim,
             "Wan: RoPE axes do not cover a head");
    return c;
}

WanAttention load_attention(const Weights& a, int64_t dim, int64_t kv_in) {
    WanAttention at;
    at.q = Linear::load(a["q"], dim, dim);
    at.k = Linear::load(a["k"], kv_in, dim);
    at.v = Linear::load(a["v"], kv_in, dim);
    at.o = Linear::load(a["o"], dim, dim);
    at.norm_q = a.get("norm_q.weight", {dim});
    at.norm_k = a.get("norm_k.weight", {dim});
    return at;
}

// [1, C, T, H, W] -> [1, T h w, C 2 2] tokens, frame by frame (the Conv3d's order).
Tensor video_tokens(const Tensor& x) {
    const int64_t C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
    std::vector<Tensor> frames;
    for (int64_t t = 0; t < T; ++t) {
        const Tensor frame = x.narrow(2, t, 1).contiguous().view({1, C, H, W});
        frames.push_back(patchify(frame, kPatch, PatchLayout::ChannelsFirst));
    }
    return T == 1 ? frames[0] : concat(frames, 1);
}

// The head's [1, T h w, 2 2 C] tokens -> [1, C, T, H, W] (channels innermost in a patch).
Tensor video_from_tokens(const Tensor& tokens, int64_t C, int64_t T, int64_t H, int64_t W) {
    const int64_t per_frame = (H / kPatch) * (W / kPatch);
    std::vector<Tensor> frames;
    for (int64_t t = 0; t < T; ++t) {
        const Tensor frame = unpatchify(tokens.narrow(1, t * per_frame, per_frame), C, H, W, kPatch,
                                        PatchLayout::ChannelsLast);
        frames.push_back(frame.view({1, C, 1, H, W}));
    }
    return T == 1 ? frames[0] : concat(frames, 2);
}

}  // namespace

WanModel WanModel::load(const Weights& w) {
    WanModel m;
    m.config_ = read_config(w);
    const WanConfig& c = m.config_;
    const int64_t D = c.dim;
    m.patch_embedding.weight =
        w.get("patch_embedding.weight", {D, c.in_channels, 1, kPatch, kPatch})
            .view({D, c.in_channels * kPatch * kPatch});
    m.patch_embedding.bias = w.get("patch_embedding.bias", {D});
    m.patch_embedding.name = w.prefix() + "patch_embedding.weight";
    m.text_in = Linear::load(w["text_embedding"]["0"], c.text_dim, D);
    m.text_out = Linear::load(w["text_embedding"]["2"], D, D);
    m.time_embedding = {Linear::load(w["time_embedding"]["0"], c.freq_dim, D),
                        Linear::load(w["time_embedding"]["2"], D, D)};
    m.time_projection = Linear::load(w["time_projection"]["1"], D, 6 * D);
    for (int i = 0; i < c.layers; ++i) {
        const Weights b = w["blocks"][i];
        WanBlock k;
        k.modulation = convert(b.get("modulation", {1, 6, D}), DType::F32).view({1, 6 * D});
        k.self_attn = load_attention(b["self_attn"], D, D);
        k.cross_attn = load_attention(b["cross_attn"], D, D);
        k.norm3 = LayerNorm::load(b["norm3"], D, c.eps);
        k.ffn_in = Linear::load(b["ffn"]["0"], D, c.ffn);
        k.ffn_out = Linear::load(b["ffn"]["2"], c.ffn, D);
        m.blocks.push_back(std::move(k));
    }
    m.head_modulation = convert(w.get("head.modulation", {1, 2, D}), DType::F32).view({1, 2 * D});
    m.head = Linear::load(w["head"]["head"], D, kPatch * kPatch * c.out_channels);
    w.check("Wan");
    m.pages_ = w.pages();
    SD_LOG_INFO("Wan: %d blocks, width %lld (%lld heads), feed-forward %lld, %lld -> %lld channels",
                c.layers, (long long)D, (long long)c.heads, (long long)c.ffn,
                (long long)c.in_channels, (long long)c.out_channels);
    return m;
}

Tensor WanModel::self_attention(const WanAttention& a, const Tensor& x, const Tensor& rope) const {
    const int64_t L = x.size(1), H = config_.heads, D = config_.head_dim;
    const float eps = config_.eps;
    const Tensor q = rms_norm(a.q.forward(x), a.norm_q, eps).view({1, L, H, D});
    const Tensor k = rms_norm(a.k.forward(x), a.norm_k, eps).view({1, L, H, D});
    const Tensor v = a.v.forward(x).view({1, L, H, D});
    return a.o.forward(dit_attention(q, k, v, rope));
}

Tensor WanModel::cross_attention(const WanAttention& a, const Tensor& x,
                                 const Tensor& context) const {
    const float eps = config_.eps;
    const Tensor q = rms_norm(a.q.forward(x), a.norm_q, eps);
    const Tensor k = rms_norm(a.k.forward(context), a.norm_k, eps);
    return a.o.forward(multi_head_attention(q, k, a.v.forward(context), config_.heads));
}

Tensor WanModel::block(const WanBlock& b, const Tensor& x, const Tensor& e0, const Tensor& context,
                       const Tensor& rope) const {
    const int64_t D = config_.dim;
    const Tensor mod = e0 + b.modulation;  // [1, 6 dim]: shift, scale, gate; shift, scale, gate
    Tensor h = gated(x, self_attention(b.self_attn, modulated_norm(x, mod, 0, D), rope), mod, 2, D);
    h = h + cross_attention(b.cross_attn, b.norm3.forward(h), context);
    const Tensor f =
        b.ffn_out.forward(gelu(b.ffn_in.forward(modulated_norm(h, mod, 3, D)), GeluApprox::Tanh));
    return gated(h, f, mod, 5, D);
}

Tensor WanModel::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context) const {
    const WanConfig& c = config_;
    SD_CHECK(x.dim() == 5 && x.size(0) == 1 && x.size(1) == c.in_channels,
             "Wan: latent %s, want [1, %lld, T, H, W]", x.describe().c_str(),
             (long long)c.in_channels);
    SD_CHECK(x.size(3) % kPatch == 0 && x.size(4) % kPatch == 0,
             "Wan: latent %s has an odd height or width", x.describe().c_str());
    SD_CHECK(context.dim() == 3 && context.size(0) == 1 && context.size(2) == c.text_dim,
             "Wan: text context %s, want [1, L, %lld] (UMT5-XXL's width)",
             context.describe().c_str(), (long long)c.text_dim);
    const int64_t T = x.size(2), H = x.size(3), W = x.size(4);

    const Tensor e = time_embedding.forward(timestep_embedding(timesteps, c.freq_dim));
    const Tensor e0 = time_projection.forward(silu(e));  // [1, 6 dim]
    const Tensor text = text_out.forward(gelu(text_in.forward(context), GeluApprox::Tanh));

    Tensor tokens = patch_embedding.forward(video_tokens(x));
    const Tensor rope = rope_table(wan_positions(T, H / kPatch, W / kPatch), c.axes_dim, c.theta);
    for (const WanBlock& b : blocks) tokens = block(b, tokens, e0, text, rope);

    const Tensor head_mod = concat({e, e}, 1) + head_modulation;  // shift, scale
    const Tensor out = head.forward(modulated_norm(tokens, head_mod, 0, c.dim));
    return video_from_tokens(out, c.out_channels, T, H, W);
}

std::vector<float> wan_positions(int64_t frames, int64_t rows, int64_t cols) {
    std::vector<float> ids;
    ids.reserve(static_cast<size_t>(3 * frames * rows * cols));
    for (int64_t f = 0; f < frames; ++f)
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
                ids.insert(ids.end(),
                           {static_cast<float>(f), static_cast<float>(i), static_cast<float>(j)});
    return ids;
}

}  // namespace sd
