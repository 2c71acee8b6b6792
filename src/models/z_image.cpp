#include "models/z_image.h"

#include <numeric>

#include "base/error.h"
#include "base/log.h"
#include "nn/dit_blocks.h"
#include "nn/rope.h"
#include "ops/convert.h"

namespace sd {
namespace {

constexpr int64_t kSeqMultiple = 32;     // text and image are padded to multiples of this
constexpr int64_t kTimeEmbedding = 256;  // the sinusoid's width
constexpr float kQkNormEps = 1e-6f;      // q_norm / k_norm (the reference's RMSNorm default)
constexpr float kFinalNormEps = 1e-6f;

int count_blocks(const Weights& w, const std::string& kind) {
    return w.count_numbered(kind, "attention.qkv.weight");
}

int64_t dim_of(const Weights& w, const std::string& name, int d) {
    return w.dim_of(name, d, "Z-Image");
}

int64_t padding_to(int64_t n, int64_t multiple) {
    return (multiple - n % multiple) % multiple;
}

ZImageConfig read_config(const Weights& w) {
    SD_CHECK(w.has("x_embedder.weight") && w.has("cap_embedder.1.weight"),
             "no Z-Image model under '%s' (no x_embedder / cap_embedder)", w.prefix().c_str());
    ZImageConfig c;
    c.hidden = dim_of(w, "x_embedder.weight", 0);
    const int64_t patch_in = dim_of(w, "x_embedder.weight", 1);
    c.cap_dim = dim_of(w, "cap_embedder.1.weight", 1);
    c.adaln = dim_of(w, "t_embedder.mlp.2.weight", 0);
    c.layers = count_blocks(w, "layers");
    c.refiner_layers = count_blocks(w, "noise_refiner");
    const std::string first = c.layers > 0 ? "layers.0." : "noise_refiner.0.";
    c.head_dim = dim_of(w, first + "attention.q_norm.weight", 0);
    c.ffn = dim_of(w, first + "feed_forward.w1.weight", 0);
    c.out_channels = dim_of(w, "final_layer.linear.weight", 0) / (c.patch * c.patch);
    SD_CHECK(patch_in % (c.patch * c.patch) == 0,
             "Z-Image: x_embedder takes %lld values, not a multiple of %lld", (long long)patch_in,
             (long long)(c.patch * c.patch));
    c.in_channels = patch_in / (c.patch * c.patch);
    SD_CHECK(c.head_dim > 0 && c.hidden % c.head_dim == 0,
             "Z-Image: the q norm width %lld does not divide the width %lld", (long long)c.head_dim,
             (long long)c.hidden);
    c.heads = c.hidden / c.head_dim;
    const int64_t qkv = dim_of(w, first + "attention.qkv.weight", 0);
    SD_CHECK(qkv == 3 * c.hidden,
             "Z-Image: attention.qkv gives %lld values; this build runs %lld (as many key/value "
             "heads as query heads)",
             (long long)qkv, (long long)(3 * c.hidden));
    const int axes = std::accumulate(c.axes_dim.begin(), c.axes_dim.end(), 0);
    SD_CHECK(axes == c.head_dim, "Z-Image: heads of %lld channels, but RoPE axes cover %d",
             (long long)c.head_dim, axes);
    return c;
}

ZImageBlock load_block(const Weights& b, const ZImageConfig& c, bool modulated) {
    const int64_t C = c.hidden;
    ZImageBlock k;
    k.qkv = Linear::load(b["attention"]["qkv"], C, 3 * C, false);
    k.out = Linear::load(b["attention"]["out"], C, C, false);
    k.q_norm = b.get("attention.q_norm.weight", {c.head_dim});
    k.k_norm = b.get("attention.k_norm.weight", {c.head_dim});
    k.w1 = Linear::load(b["feed_forward"]["w1"], C, c.ffn, false);
    k.w2 = Linear::load(b["feed_forward"]["w2"], c.ffn, C, false);
    k.w3 = Linear::load(b["feed_forward"]["w3"], C, c.ffn, false);
    k.attention_norm1 = b.get("attention_norm1.weight", {C});
    k.attention_norm2 = b.get("attention_norm2.weight", {C});
    k.ffn_norm1 = b.get("ffn_norm1.weight", {C});
    k.ffn_norm2 = b.get("ffn_norm2.weight", {C});
    if (modulated) k.modulation = Linear::load(b["adaLN_modulation"]["0"], c.adaln, 4 * C);
    return k;
}

// A norm scale times a per-channel factor [1, 1, C] (a chunk of the modulation): the
// modulated RMS norm in one pass.
Tensor scaled(const Tensor& norm_scale, const Tensor& factor) {
    return mul(norm_scale, factor.view({norm_scale.size(0)}));
}

}  // namespace

ZImageModel ZImageModel::load(const Weights& w) {
    ZImageModel m;
    m.config_ = read_config(w);
    const ZImageConfig& c = m.config_;
    const int64_t C = c.hidden;
    m.x_embedder = Linear::load(w["x_embedder"], c.patch * c.patch * c.in_channels, C);
    m.cap_norm = w.get("cap_embedder.0.weight", {c.cap_dim});
    m.cap_linear = Linear::load(w["cap_embedder"]["1"], c.cap_dim, C);
    m.cap_pad_token = convert(w.get("cap_pad_token", {1, C}), DType::F32);
    m.x_pad_token = convert(w.get("x_pad_token", {1, C}), DType::F32);
    const int64_t t_hidden = dim_of(w, "t_embedder.mlp.0.weight", 0);
    m.t_embedder = {Linear::load(w["t_embedder"]["mlp"]["0"], kTimeEmbedding, t_hidden),
                    Linear::load(w["t_embedder"]["mlp"]["2"], t_hidden, c.adaln)};
    for (int i = 0; i < c.refiner_layers; ++i) {
        m.noise_refiner.push_back(load_block(w["noise_refiner"][i], c, true));
        m.context_refiner.push_back(load_block(w["context_refiner"][i], c, false));
    }
    for (int i = 0; i < c.layers; ++i) m.layers.push_back(load_block(w["layers"][i], c, true));
    m.final_adaln = Linear::load(w["final_layer"]["adaLN_modulation"]["1"], c.adaln, C);
    m.final_linear =
        Linear::load(w["final_layer"]["linear"], C, c.patch * c.patch * c.out_channels);
    w.check("Z-Image");
    m.pages_ = w.pages();
    SD_LOG_INFO(
        "Z-Image: %d layers + %d refiner layers each side, width %lld (%lld heads), "
        "text width %lld",
        c.layers, c.refiner_layers, (long long)C, (long long)c.heads, (long long)c.cap_dim);
    return m;
}

Tensor ZImageModel::attention(const ZImageBlock& b, const Tensor& x, const Tensor& rope) const {
    const int64_t H = config_.heads, D = config_.head_dim;
    const Tensor qkv = b.qkv.forward(x);
    const Tensor q = rms_norm(head_view(qkv, 0, H, D), b.q_norm, kQkNormEps);
    const Tensor k = rms_norm(head_view(qkv, 1, H, D), b.k_norm, kQkNormEps);
    return b.out.forward(dit_attention(q, k, head_view(qkv, 2, H, D), rope));
}

Tensor ZImageModel::block(const ZImageBlock& b, const Tensor& x, const Tensor& rope,
                          const Tensor& t_emb) const {
    const int64_t C = config_.hidden;
    const float eps = config_.norm_eps;
    Tensor norm1 = b.attention_norm1, norm2 = b.attention_norm2;
    Tensor ffn1 = b.ffn_norm1, ffn2 = b.ffn_norm2;
    if (t_emb.defined()) {
        // (1 + scale) on the first norm, tanh(gate) on the second: folded into their scales.
        const Tensor mod = b.modulation.forward(t_emb);  // [1, 4C]
        norm1 = scaled(norm1, add_scalar(mod.narrow(1, 0, C), 1.0f));
        norm2 = scaled(norm2, tanh(mod.narrow(1, C, C)));
        ffn1 = scaled(ffn1, add_scalar(mod.narrow(1, 2 * C, C), 1.0f));
        ffn2 = scaled(ffn2, tanh(mod.narrow(1, 3 * C, C)));
    }
    Tensor h = x + rms_norm(attention(b, rms_norm(x, norm1, eps), rope), norm2, eps);
    const Tensor f = rms_norm(h, ffn1, eps);
    const Tensor swiglu = mul(silu(b.w1.forward(f)), b.w3.forward(f));
    return h + rms_norm(b.w2.forward(swiglu), ffn2, eps);
}

Tensor ZImageModel::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context) const {
    const ZImageConfig& c = config_;
    const int64_t p = c.patch;
    SD_CHECK(x.dim() == 4 && x.size(0) == 1 && x.size(1) == c.in_channels,
             "Z-Image: latent %s, want [1, %lld, H, W]", x.describe().c_str(),
             (long long)c.in_channels);
    SD_CHECK(context.dim() == 3 && context.size(0) == 1 && context.size(2) == c.cap_dim,
             "Z-Image: text context %s, want [1, L, %lld] (the LLM's width)",
             context.describe().c_str(), (long long)c.cap_dim);
    const int64_t channels = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t h = (H + p - 1) / p, w = (W + p - 1) / p;  // patches, padded inside

    // Time: the network's own t runs from noise (0) to image (1000).
    const Tensor t = add_scalar(scale(timesteps, -1.0f), 1000.0f);
    const Tensor t_emb = t_embedder.forward(timestep_embedding(t, kTimeEmbedding));

    Tensor txt = cap_linear.forward(rms_norm(context, cap_norm, c.norm_eps));
    const int64_t txt_pad = padding_to(txt.size(1), kSeqMultiple);
    if (txt_pad > 0)
        txt = concat({txt, cap_pad_token.view({1, 1, c.hidden}).expand({1, txt_pad, c.hidden})}, 1);
    Tensor img = x_embedder.forward(patchify(x, p, PatchLayout::ChannelsLast));
    const int64_t img_pad = padding_to(h * w, kSeqMultiple);
    if (img_pad > 0)
        img = concat({img, x_pad_token.view({1, 1, c.hidden}).expand({1, img_pad, c.hidden})}, 1);
    const int64_t lt = txt.size(1), li = img.size(1);

    const Tensor rope = rope_table(z_image_positions(lt, h, w, img_pad), c.axes_dim, c.theta);
    const Tensor txt_rope = rope.narrow(0, 0, lt).contiguous();
    const Tensor img_rope = rope.narrow(0, lt, li).contiguous();
    for (const ZImageBlock& b : context_refiner) txt = block(b, txt, txt_rope, Tensor());
    for (const ZImageBlock& b : noise_refiner) img = block(b, img, img_rope, t_emb);
    Tensor tokens = concat({txt, img}, 1);
    for (const ZImageBlock& b : layers) tokens = block(b, tokens, rope, t_emb);

    const Tensor final_scale = add_scalar(final_adaln.forward(silu(t_emb)), 1.0f);
    const Tensor out = final_linear.forward(layer_norm(
        tokens.narrow(1, lt, h * w), final_scale.view({c.hidden}), Tensor(), kFinalNormEps));
    return unpatchify(scale(out, -1.0f), channels, H, W, p, PatchLayout::ChannelsLast);
}

std::vector<float> z_image_positions(int64_t txt, int64_t h, int64_t w, int64_t img_pad) {
    std::vector<float> ids;
    ids.reserve(static_cast<size_t>(3 * (txt + h * w + img_pad)));
    for (int64_t i = 0; i < txt; ++i) ids.insert(ids.end(), {static_cast<float>(i + 1), 0, 0});
    const float index = static_cast<float>(txt + 1);
    for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
            ids.insert(ids.end(), {index, static_cast<float>(i), static_cast<float>(j)});
    ids.resize(ids.size() + static_cast<size_t>(3 * img_pad), 0.0f);
    return ids;
}

}  // namespace sd
