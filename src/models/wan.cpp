#include "models/wan.h"

#include <algorithm>
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
    WanConfig c;
    c.dim = dim_of(w, "patch_embedding.weight", 0);
    c.in_channels = dim_of(w, "patch_embedding.weight", 1);
    c.ffn = dim_of(w, "blocks.0.ffn.0.weight", 0);
    c.text_dim = dim_of(w, "text_embedding.0.weight", 1);
    c.freq_dim = dim_of(w, "time_embedding.0.weight", 1);
    c.out_channels = dim_of(w, "head.head.weight", 0) / (kPatch * kPatch);
    c.layers = w.count_numbered("blocks", "self_attn.q.weight");
    c.image_input = w.has("img_emb.proj.1.weight");
    if (c.image_input) c.clip_dim = dim_of(w, "img_emb.proj.1.weight", 1);
    if (w.has("vace_patch_embedding.weight")) {
        c.vace_in_channels = dim_of(w, "vace_patch_embedding.weight", 1);
        c.vace_layers = w.count_numbered("vace_blocks", "self_attn.q.weight");
        SD_CHECK(c.vace_layers > 0 && c.vace_layers <= c.layers,
                 "Wan VACE: %d VACE blocks for %d blocks", c.vace_layers, c.layers);
    }
    SD_CHECK(c.dim % c.head_dim == 0, "Wan: width %lld is not a whole number of %lld-wide heads",
             (long long)c.dim, (long long)c.head_dim);
    c.heads = c.dim / c.head_dim;
    SD_CHECK(std::accumulate(c.axes_dim.begin(), c.axes_dim.end(), 0) == c.head_dim,
             "Wan: RoPE axes do not cover a head");
    return c;
}

WanAttention load_attention(const Weights& a, int64_t dim, bool image_input = false) {
    WanAttention at;
    at.q = Linear::load(a["q"], dim, dim);
    at.k = Linear::load(a["k"], dim, dim);
    at.v = Linear::load(a["v"], dim, dim);
    at.o = Linear::load(a["o"], dim, dim);
    at.norm_q = a.get("norm_q.weight", {dim});
    at.norm_k = a.get("norm_k.weight", {dim});
    if (image_input) {
        at.k_img = Linear::load(a["k_img"], dim, dim);
        at.v_img = Linear::load(a["v_img"], dim, dim);
        at.norm_k_img = a.get("norm_k_img.weight", {dim});
    }
    return at;
}

WanBlock load_block(const Weights& b, const WanConfig& c) {
    const int64_t D = c.dim;
    WanBlock k;
    k.modulation = convert(b.get("modulation", {1, 6, D}), DType::F32).view({1, 6 * D});
    k.self_attn = load_attention(b["self_attn"], D);
    k.cross_attn = load_attention(b["cross_attn"], D, c.image_input);
    k.norm3 = LayerNorm::load(b["norm3"], D, c.eps);
    k.ffn_in = Linear::load(b["ffn"]["0"], D, c.ffn);
    k.ffn_out = Linear::load(b["ffn"]["2"], c.ffn, D);
    return k;
}

// A 1x2x2 Conv3d's weight [D, C, 1, 2, 2] as a Linear over patch tokens.
Linear load_patch_embedding(const Weights& w, const std::string& name, int64_t D, int64_t C) {
    Linear l;
    l.weight = w.get(name + ".weight", {D, C, 1, kPatch, kPatch}).view({D, C * kPatch * kPatch});
    l.bias = w.get(name + ".bias", {D});
    l.name = w.prefix() + name + ".weight";
    return l;
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

// Wan2.2 TI2V gives each frame its own timestep (its kept first frame is at 0): a frame's
// tokens take their frame's row of `mod` [frames, k dim]. One row serves every token.
template <class F>
Tensor by_frame(const Tensor& mod, int64_t tokens, F&& f) {
    const int64_t frames = mod.size(0);
    if (frames == 1) return f(0, tokens, mod);
    const int64_t per_frame = tokens / frames;
    std::vector<Tensor> parts;
    for (int64_t t = 0; t < frames; ++t)
        parts.push_back(f(t * per_frame, per_frame, mod.narrow(0, t, 1)));
    return concat(parts, 1);
}

Tensor frame_modulated_norm(const Tensor& x, const Tensor& mod, int64_t i, int64_t dim) {
    return by_frame(mod, x.size(1), [&](int64_t start, int64_t n, const Tensor& row) {
        return modulated_norm(x.narrow(1, start, n).contiguous(), row, i, dim);
    });
}

Tensor frame_gated(const Tensor& x, const Tensor& y, const Tensor& mod, int64_t i, int64_t dim) {
    return by_frame(mod, x.size(1), [&](int64_t start, int64_t n, const Tensor& row) {
        return gated(x.narrow(1, start, n).contiguous(), y.narrow(1, start, n).contiguous(), row, i,
                     dim);
    });
}

}  // namespace

WanImageEmbedding WanImageEmbedding::load(const Weights& w, int64_t clip_dim, int64_t dim) {
    WanImageEmbedding m;
    m.norm_in = LayerNorm::load(w["proj"]["0"], clip_dim, 1e-5f);
    m.fc1 = Linear::load(w["proj"]["1"], clip_dim, clip_dim);
    m.fc2 = Linear::load(w["proj"]["3"], clip_dim, dim);
    m.norm_out = LayerNorm::load(w["proj"]["4"], dim, 1e-5f);
    if (w.has("emb_pos")) m.emb_pos = w.get("emb_pos", {1, 2 * 257, clip_dim});
    return m;
}

Tensor WanImageEmbedding::forward(const Tensor& clip_states) const {
    Tensor x = clip_states;
    if (emb_pos.defined()) {
        // FLF2V: the start and end frames' states, each with its positions (the shorter of the
        // two lengths, as the reference slices both).
        const int64_t n = std::min(x.size(1), emb_pos.size(1));
        x = x.narrow(1, 0, n) + convert(emb_pos, DType::F32).narrow(1, 0, n);
    }
    return norm_out.forward(fc2.forward(gelu(fc1.forward(norm_in.forward(x)), GeluApprox::Tanh)));
}

WanModel WanModel::load(const Weights& w) {
    WanModel m;
    m.config_ = read_config(w);
    const WanConfig& c = m.config_;
    const int64_t D = c.dim;
    m.patch_embedding = load_patch_embedding(w, "patch_embedding", D, c.in_channels);
    m.text_in = Linear::load(w["text_embedding"]["0"], c.text_dim, D);
    m.text_out = Linear::load(w["text_embedding"]["2"], D, D);
    m.time_embedding = {Linear::load(w["time_embedding"]["0"], c.freq_dim, D),
                        Linear::load(w["time_embedding"]["2"], D, D)};
    m.time_projection = Linear::load(w["time_projection"]["1"], D, 6 * D);
    for (int i = 0; i < c.layers; ++i) m.blocks.push_back(load_block(w["blocks"][i], c));
    if (c.vace_in_channels > 0) {
        m.vace_patch_embedding =
            load_patch_embedding(w, "vace_patch_embedding", D, c.vace_in_channels);
        for (int i = 0; i < c.vace_layers; ++i) {
            const Weights b = w["vace_blocks"][i];
            WanVaceBlock v{load_block(b, c), std::nullopt, Linear::load(b["after_proj"], D, D)};
            if (i == 0) v.before_proj = Linear::load(b["before_proj"], D, D);
            m.vace_blocks.push_back(std::move(v));
        }
    }
    m.head_modulation = convert(w.get("head.modulation", {1, 2, D}), DType::F32).view({1, 2 * D});
    m.head = Linear::load(w["head"]["head"], D, kPatch * kPatch * c.out_channels);
    if (c.image_input) m.img_emb = WanImageEmbedding::load(w["img_emb"], c.clip_dim, D);
    w.check("Wan");
    m.pages_ = w.pages();
    SD_LOG_INFO(
        "Wan%s: %d blocks, width %lld (%lld heads), feed-forward %lld, %lld -> %lld channels",
        c.image_input ? " image-to-video" : "", c.layers, (long long)D, (long long)c.heads,
        (long long)c.ffn, (long long)c.in_channels, (long long)c.out_channels);
    if (c.vace_layers > 0)
        SD_LOG_INFO("Wan VACE: %d control blocks (after every %d), %lld context channels",
                    c.vace_layers, c.layers / c.vace_layers, (long long)c.vace_in_channels);
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

Tensor WanModel::cross_attention(const WanAttention& a, const Tensor& x, const Tensor& context,
                                 const Tensor& image) const {
    const float eps = config_.eps;
    const Tensor q = rms_norm(a.q.forward(x), a.norm_q, eps);
    const Tensor k = rms_norm(a.k.forward(context), a.norm_k, eps);
    Tensor o = multi_head_attention(q, k, a.v.forward(context), config_.heads);
    if (image.defined()) {
        const Tensor k_img = rms_norm(a.k_img->forward(image), a.norm_k_img, eps);
        o = o + multi_head_attention(q, k_img, a.v_img->forward(image), config_.heads);
    }
    return a.o.forward(o);
}

Tensor WanModel::block(const WanBlock& b, const Tensor& x, const Tensor& e0, const Tensor& context,
                       const Tensor& image, const Tensor& rope) const {
    const int64_t D = config_.dim;
    // [1 or frames, 6 dim]: shift, scale, gate of the attention; shift, scale, gate of the ffn
    const Tensor mod = e0 + b.modulation;
    const Tensor a = self_attention(b.self_attn, frame_modulated_norm(x, mod, 0, D), rope);
    Tensor h = frame_gated(x, a, mod, 2, D);
    h = h + cross_attention(b.cross_attn, b.norm3.forward(h), context, image);
    const Tensor f = b.ffn_out.forward(
        gelu(b.ffn_in.forward(frame_modulated_norm(h, mod, 3, D)), GeluApprox::Tanh));
    return frame_gated(h, f, mod, 5, D);
}

const WanVaceBlock* WanModel::vace_after(size_t i) const {
    if (vace_blocks.empty()) return nullptr;
    const size_t every = blocks.size() / vace_blocks.size();
    return i % every == 0 && i / every < vace_blocks.size() ? &vace_blocks[i / every] : nullptr;
}

Tensor WanModel::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                         const Tensor& clip_states, const WanVaceInput& vace) const {
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
    SD_CHECK(timesteps.numel() == 1 || timesteps.numel() == T,
             "Wan: %lld timesteps for %lld frames (one, or one per frame)",
             (long long)timesteps.numel(), (long long)T);

    // e [1 or T, dim], e0 [1 or T, 6 dim]: one row per timestep.
    const Tensor e = time_embedding.forward(timestep_embedding(timesteps, c.freq_dim));
    const Tensor e0 = time_projection.forward(silu(e));
    const Tensor text = text_out.forward(gelu(text_in.forward(context), GeluApprox::Tanh));
    Tensor image;
    if (c.image_input) {
        SD_CHECK(
            clip_states.defined() && clip_states.dim() == 3 && clip_states.size(2) == c.clip_dim,
            "Wan image-to-video: it needs the first frame's CLIP-vision states [1, n, %lld] "
            "(--clip_vision), not %s",
            (long long)c.clip_dim, clip_states.defined() ? clip_states.describe().c_str() : "none");
        image = img_emb->forward(clip_states);
    }

    Tensor tokens = patch_embedding.forward(video_tokens(x));
    const Tensor rope = rope_table(wan_positions(T, H / kPatch, W / kPatch), c.axes_dim, c.theta);
    // VACE: the control stream runs beside the main one, each of its blocks after its main
    // block, its hint added to the main stream.
    Tensor control;
    const Tensor input = tokens;
    if (c.vace_layers > 0) {
        const Tensor& v = vace.context;
        SD_CHECK(v.defined() && v.dim() == 5 && v.size(1) == c.vace_in_channels && v.size(2) == T &&
                     v.size(3) == H && v.size(4) == W,
                 "Wan VACE: the control context is %s, want [1, %lld, %lld, %lld, %lld]",
                 v.defined() ? v.describe().c_str() : "missing", (long long)c.vace_in_channels,
                 (long long)T, (long long)H, (long long)W);
        control = vace_patch_embedding.forward(video_tokens(v));
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        tokens = block(blocks[i], tokens, e0, text, image, rope);
        if (const WanVaceBlock* v = vace_after(i)) {
            if (v->before_proj) control = v->before_proj->forward(control) + input;
            control = block(v->block, control, e0, text, image, rope);
            tokens = tokens + v->after_proj.forward(control) * vace.strength;
        }
    }

    const Tensor head_mod = concat({e, e}, 1) + head_modulation;  // shift, scale
    const Tensor out = head.forward(frame_modulated_norm(tokens, head_mod, 0, c.dim));
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
