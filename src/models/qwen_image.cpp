#include "models/qwen_image.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "base/log.h"
#include "ops/convert.h"
#include "ops/ops.h"

namespace sd {
namespace {

constexpr int64_t kTimeEmbedding = 256;  // the sinusoid's width
constexpr float kNormEps = 1e-6f;        // every LayerNorm and RMSNorm of the model
constexpr const char* kZeroCondMarker = "__index_timestep_zero__";
constexpr const char* kAdditionT = "time_text_embed.addition_t_embedding.weight";  // Layered

int64_t dim_of(const Weights& w, const std::string& name, int d) {
    return w.dim_of(name, d, "Qwen-Image");
}

QwenImageConfig read_config(const Weights& w) {
    SD_CHECK(w.has("img_in.weight") && w.has("txt_in.weight"),
             "no Qwen-Image model under '%s' (no img_in / txt_in)", w.prefix().c_str());
    QwenImageConfig c;
    c.hidden = dim_of(w, "img_in.weight", 0);
    const int64_t patch_in = dim_of(w, "img_in.weight", 1);
    c.context_dim = dim_of(w, "txt_in.weight", 1);
    c.depth = w.count_numbered("transformer_blocks", "img_mod.1.weight");
    SD_CHECK(c.depth > 0, "Qwen-Image: no transformer_blocks under '%s'", w.prefix().c_str());
    c.head_dim = dim_of(w, "transformer_blocks.0.attn.norm_q.weight", 0);
    c.mlp_hidden = dim_of(w, "transformer_blocks.0.img_mlp.net.0.proj.weight", 0);
    const int64_t pp = c.patch * c.patch;
    SD_CHECK(patch_in % pp == 0, "Qwen-Image: img_in takes %lld values, not a multiple of %lld",
             (long long)patch_in, (long long)pp);
    c.in_channels = patch_in / pp;
    c.out_channels = dim_of(w, "proj_out.weight", 0) / pp;
    SD_CHECK(c.head_dim > 0 && c.hidden % c.head_dim == 0,
             "Qwen-Image: the q norm width %lld does not divide the width %lld",
             (long long)c.head_dim, (long long)c.hidden);
    c.heads = c.hidden / c.head_dim;
    const int axes = std::accumulate(c.axes_dim.begin(), c.axes_dim.end(), 0);
    SD_CHECK(axes == c.head_dim, "Qwen-Image: heads of %lld channels, but RoPE axes cover %d",
             (long long)c.head_dim, axes);
    c.zero_cond_t = w.has(kZeroCondMarker);
    c.additional_t_cond = w.has(kAdditionT);
    return c;
}

// One stream of block `b`: the image's or the text's; the attention's names differ per side.
QwenImageStream load_stream(const Weights& b, const QwenImageConfig& c, bool image) {
    const int64_t C = c.hidden, D = c.head_dim;
    const Weights a = b["attn"];
    const std::string side = image ? "img" : "txt";
    QwenImageStream s;
    s.mod = Linear::load(b[side + "_mod"]["1"], C, 6 * C);
    s.q = Linear::load(a[image ? "to_q" : "add_q_proj"], C, C);
    s.k = Linear::load(a[image ? "to_k" : "add_k_proj"], C, C);
    s.v = Linear::load(a[image ? "to_v" : "add_v_proj"], C, C);
    s.norm_q = a.get(image ? "norm_q.weight" : "norm_added_q.weight", {D});
    s.norm_k = a.get(image ? "norm_k.weight" : "norm_added_k.weight", {D});
    // The reference builds to_out.0 / to_add_out (and the MLPs' net.2) with a "scale" of 1/32:
    // ggml's Linear multiplies the input by it and the product by its inverse, a guard against
    // f16 overflow on some GPU backends that leaves the math unchanged; we compute in f32.
    s.out = image ? Linear::load(a["to_out"]["0"], C, C) : Linear::load(a["to_add_out"], C, C);
    const Weights mlp = b[side + "_mlp"]["net"];
    s.mlp_in = Linear::load(mlp["0"]["proj"], C, c.mlp_hidden);
    s.mlp_out = Linear::load(mlp["2"], c.mlp_hidden, C);
    return s;
}

Tensor feed_forward(const QwenImageStream& s, const Tensor& x) {
    return s.mlp_out.forward(gelu(s.mlp_in.forward(x), GeluApprox::Tanh));
}

}  // namespace

QwenImageModel QwenImageModel::load(const Weights& w, bool zero_cond_t) {
    QwenImageModel m;
    m.config_ = read_config(w);
    m.config_.zero_cond_t = m.config_.zero_cond_t || zero_cond_t;
    const QwenImageConfig& c = m.config_;
    const int64_t C = c.hidden, pp = c.patch * c.patch;
    m.img_in = Linear::load(w["img_in"], c.in_channels * pp, C);
    m.txt_in = Linear::load(w["txt_in"], c.context_dim, C);
    m.txt_norm = w.get("txt_norm.weight", {c.context_dim});
    const Weights te = w["time_text_embed"]["timestep_embedder"];
    m.time_embedder = {Linear::load(te["linear_1"], kTimeEmbedding, C),
                       Linear::load(te["linear_2"], C, C)};
    // The reference always looks up row 0 (addition_t_cond = 0); row 1 is never used.
    if (c.additional_t_cond)
        m.addition_t = convert(w.get(kAdditionT, {2, C}), DType::F32).narrow(0, 0, 1).contiguous();
    for (int i = 0; i < c.depth; ++i) {
        const Weights b = w["transformer_blocks"][i];
        m.blocks.push_back({load_stream(b, c, true), load_stream(b, c, false)});
    }
    m.norm_out = Linear::load(w["norm_out"]["linear"], C, 2 * C);
    m.proj_out = Linear::load(w["proj_out"], C, pp * c.out_channels);
    w.skip(kZeroCondMarker);
    w.check("Qwen-Image");
    m.pages_ = w.pages();
    SD_LOG_INFO("Qwen-Image%s: %d blocks, width %lld (%lld heads), text width %lld%s",
                c.additional_t_cond ? "-Layered" : "", c.depth, (long long)C, (long long)c.heads,
                (long long)c.context_dim, c.zero_cond_t ? ", zero_cond_t" : "");
    return m;
}

Tensor QwenImageModel::time_embedding(const Tensor& timesteps) const {
    const Tensor t_emb = time_embedder.forward(timestep_embedding(timesteps, kTimeEmbedding));
    return addition_t.defined() ? add(t_emb, addition_t) : t_emb;
}

Tensor QwenImageModel::image_norm(const Tensor& img, const ImageModulation& m,
                                  int64_t chunk) const {
    const int64_t C = config_.hidden, L = img.size(1);
    if (!m.ref.defined() || m.n_main == L) return modulated_norm(img, m.main, chunk, C);
    return concat({modulated_norm(img.narrow(1, 0, m.n_main), m.main, chunk, C),
                   modulated_norm(img.narrow(1, m.n_main, L - m.n_main), m.ref, chunk, C)},
                  1);
}

Tensor QwenImageModel::image_gated(const Tensor& img, const Tensor& y, const ImageModulation& m,
                                   int64_t chunk) const {
    const int64_t C = config_.hidden, L = img.size(1);
    if (!m.ref.defined() || m.n_main == L) return gated(img, y, m.main, chunk, C);
    const int64_t n = m.n_main, r = L - n;
    return concat({gated(img.narrow(1, 0, n), y.narrow(1, 0, n), m.main, chunk, C),
                   gated(img.narrow(1, n, r), y.narrow(1, n, r), m.ref, chunk, C)},
                  1);
}

std::pair<Tensor, Tensor> QwenImageModel::attention(const QwenImageBlock& b, const Tensor& img,
                                                    const Tensor& txt, const Tensor& rope) const {
    const int64_t H = config_.heads, D = config_.head_dim, lt = txt.size(1);
    const QwenImageStream &I = b.img, &T = b.txt;
    // Joint attention over [text, image]: each stream's heads normed by its own scales.
    const Tensor q = joint_heads(T.q.forward(txt), I.q.forward(img), 0, H, D, T.norm_q, I.norm_q);
    const Tensor k = joint_heads(T.k.forward(txt), I.k.forward(img), 0, H, D, T.norm_k, I.norm_k);
    const Tensor v = joint_heads(T.v.forward(txt), I.v.forward(img), 0, H, D);
    const Tensor out = dit_attention(q, k, v, rope);  // [1, lt + li, H D]
    return {I.out.forward(out.narrow(1, lt, img.size(1))), T.out.forward(out.narrow(1, 0, lt))};
}

void QwenImageModel::block(const QwenImageBlock& b, Tensor& img, Tensor& txt, const Tensor& t_emb,
                           const Tensor& t0_emb, int64_t n_img, const Tensor& rope) const {
    const int64_t C = config_.hidden;
    ImageModulation im{b.img.mod.forward(silu(t_emb)), Tensor(), n_img};
    if (t0_emb.defined()) im.ref = b.img.mod.forward(silu(t0_emb));
    const Tensor tm = b.txt.mod.forward(silu(t_emb));  // shift, scale, gate; shift, scale, gate

    const auto [img_attn, txt_attn] =
        attention(b, image_norm(img, im, 0), modulated_norm(txt, tm, 0, C), rope);
    img = image_gated(img, img_attn, im, 2);
    txt = gated(txt, txt_attn, tm, 2, C);
    img = image_gated(img, feed_forward(b.img, image_norm(img, im, 3)), im, 5);
    txt = gated(txt, feed_forward(b.txt, modulated_norm(txt, tm, 3, C)), tm, 5, C);
}

Tensor QwenImageModel::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                               const std::vector<Tensor>& refs, RefIndexMode ref_index) const {
    const QwenImageConfig& c = config_;
    const int64_t p = c.patch, C = c.hidden;
    SD_CHECK((x.dim() == 4 || x.dim() == 5) && x.size(0) == 1 && x.size(1) == c.in_channels,
             "Qwen-Image: latent %s, want [1, %lld, H, W] (or [1, %lld, T, H, W])",
             x.describe().c_str(), (long long)c.in_channels, (long long)c.in_channels);
    SD_CHECK(context.dim() == 3 && context.size(0) == 1 && context.size(2) == c.context_dim,
             "Qwen-Image: text context %s, want [1, L, %lld]", context.describe().c_str(),
             (long long)c.context_dim);
    const bool frames_axis = x.dim() == 5;
    const int64_t channels = x.size(1), T = frames_axis ? x.size(2) : 1;
    const int64_t H = x.size(x.dim() - 2), W = x.size(x.dim() - 1);
    const int64_t h = (H + p - 1) / p, w = (W + p - 1) / p;

    // A frame's patches as an image's (channels first), frame after frame.
    std::vector<Tensor> patches;
    for (int64_t t = 0; t < T; ++t) {
        const Tensor frame =
            frames_axis ? x.narrow(2, t, 1).contiguous().view({1, channels, H, W}) : x;
        patches.push_back(patchify(frame, p, PatchLayout::ChannelsFirst));
    }
    std::vector<std::pair<int64_t, int64_t>> refs_hw;
    for (const Tensor& r : refs) {
        SD_CHECK(r.dim() == 4 && r.size(0) == 1 && r.size(1) == c.in_channels,
                 "Qwen-Image: reference latent %s, want [1, %lld, h, w]", r.describe().c_str(),
                 (long long)c.in_channels);
        patches.push_back(patchify(r, p, PatchLayout::ChannelsFirst));
        refs_hw.emplace_back(r.size(2), r.size(3));
    }
    Tensor img = img_in.forward(patches.size() == 1 ? patches[0] : concat(patches, 1));
    Tensor txt = txt_in.forward(rms_norm(context, txt_norm, kNormEps));
    const int64_t lt = txt.size(1), n_img = T * h * w;

    const Tensor t_emb = time_embedding(timesteps);
    // zero_cond_t: the reference tokens' modulation comes from the embedding of t = 0.
    const Tensor t0_emb =
        c.zero_cond_t && !refs.empty() ? time_embedding(Tensor::zeros({1})) : Tensor();
    const Tensor rope =
        rope_table(qwen_image_positions(lt, T, h, w, p, refs_hw, ref_index), c.axes_dim, c.theta);
    for (const QwenImageBlock& b : blocks) block(b, img, txt, t_emb, t0_emb, n_img, rope);

    const Tensor mod = norm_out.forward(silu(t_emb));  // scale, then shift
    const Tensor scale = add_scalar(mod.narrow(1, 0, C), 1.0f).view({C});
    const Tensor out = proj_out.forward(
        layer_norm(img.narrow(1, 0, n_img), scale, mod.narrow(1, C, C).view({C}), kNormEps));
    if (!frames_axis) return unpatchify(out, channels, H, W, p, PatchLayout::ChannelsFirst);
    std::vector<Tensor> frames;
    for (int64_t t = 0; t < T; ++t)
        frames.push_back(unpatchify(out.narrow(1, t * h * w, h * w), channels, H, W, p,
                                    PatchLayout::ChannelsFirst)
                             .view({1, channels, 1, H, W}));
    return T == 1 ? frames[0] : concat(frames, 2);
}

std::vector<float> qwen_image_positions(int64_t txt, int64_t frames, int64_t h, int64_t w,
                                        int64_t patch,
                                        const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                        RefIndexMode ref_index) {
    std::vector<float> ids;
    const int64_t start = std::max(h, w) / 2;
    for (int64_t i = 0; i < txt; ++i) {
        const float s = static_cast<float>(start + i);
        ids.insert(ids.end(), {s, s, s});
    }
    for (int64_t t = 0; t < frames; ++t)
        append_grid_positions(ids, h, w, static_cast<float>(t), -(h / 2), -(w / 2));
    // The reference numbers Qwen-Image's references down from 0 (-1, -2, ...), up from 1.
    append_reference_positions(ids, refs_hw, patch, ref_index, true,
                               ref_index == RefIndexMode::Decrease ? 0 : 1);
    return ids;
}

}  // namespace sd
