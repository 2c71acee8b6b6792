#include "models/flux2.h"

#include <numeric>

#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

constexpr float kNormEps = 1e-6f;
constexpr int64_t kTimeEmbedding = 256;
constexpr float kTimeFactor = 1000.0f;

int64_t dim_of(const Weights& w, const std::string& name, int d) {
    return w.dim_of(name, d, "FLUX.2");
}

// Head width and MLP width from the first block there is (double, else single).
void read_block_widths(const Weights& w, Flux2Config& c) {
    if (c.depth > 0) {
        c.head_dim = dim_of(w, "double_blocks.0.img_attn.norm.query_norm.scale", 0);
        c.mlp_hidden = dim_of(w, "double_blocks.0.img_mlp.0.weight", 0) / 2;
    } else if (c.depth_single > 0) {
        c.head_dim = dim_of(w, "single_blocks.0.norm.query_norm.scale", 0);
        c.mlp_hidden = (dim_of(w, "single_blocks.0.linear1.weight", 0) - 3 * c.hidden) / 2;
    }
}

Flux2Config read_config(const Weights& w) {
    SD_CHECK(w.has("img_in.weight") && w.has("double_stream_modulation_img.lin.weight"),
             "no FLUX.2 model under '%s' (no img_in.weight / double_stream_modulation_img)",
             w.prefix().c_str());
    Flux2Config c;
    c.hidden = dim_of(w, "img_in.weight", 0);
    c.in_channels = dim_of(w, "img_in.weight", 1);
    c.context_dim = dim_of(w, "txt_in.weight", 1);
    c.guidance_embed = w.has("guidance_in.in_layer.weight");
    c.depth = w.count_numbered("double_blocks", "img_attn.qkv.weight");
    c.depth_single = w.count_numbered("single_blocks", "linear1.weight");
    read_block_widths(w, c);
    SD_CHECK(c.head_dim > 0 && c.hidden % c.head_dim == 0 && c.mlp_hidden > 0,
             "FLUX.2: the QK norm width %lld does not divide the width %lld", (long long)c.head_dim,
             (long long)c.hidden);
    c.heads = c.hidden / c.head_dim;
    const int axes = std::accumulate(c.axes_dim.begin(), c.axes_dim.end(), 0);
    SD_CHECK(axes == c.head_dim, "FLUX.2: heads of %lld channels, but RoPE axes cover %d",
             (long long)c.head_dim, axes);
    return c;
}

Flux2Attention load_attention(const Weights& w, int64_t hidden, int64_t head_dim) {
    return {Linear::load(w["qkv"], hidden, 3 * hidden, false),
            Linear::load(w["proj"], hidden, hidden, false),
            w.get("norm.query_norm.scale", {head_dim}), w.get("norm.key_norm.scale", {head_dim})};
}

Flux2DoubleBlock load_double(const Weights& b, const Flux2Config& c) {
    const int64_t C = c.hidden, mlp = c.mlp_hidden;
    return {load_attention(b["img_attn"], C, c.head_dim),
            load_attention(b["txt_attn"], C, c.head_dim),
            Linear::load(b["img_mlp"]["0"], C, 2 * mlp, false),
            Linear::load(b["img_mlp"]["2"], mlp, C, false),
            Linear::load(b["txt_mlp"]["0"], C, 2 * mlp, false),
            Linear::load(b["txt_mlp"]["2"], mlp, C, false)};
}

Flux2SingleBlock load_single(const Weights& b, const Flux2Config& c) {
    const int64_t C = c.hidden;
    return {Linear::load(b["linear1"], C, 3 * C + 2 * c.mlp_hidden, false),
            Linear::load(b["linear2"], C + c.mlp_hidden, C, false),
            b.get("norm.query_norm.scale", {c.head_dim}),
            b.get("norm.key_norm.scale", {c.head_dim})};
}

MlpEmbedder load_embedder(const Weights& w, int64_t hidden) {
    return {Linear::load(w["in_layer"], kTimeEmbedding, hidden, false),
            Linear::load(w["out_layer"], hidden, hidden, false)};
}

}  // namespace

Flux2Model Flux2Model::load(const Weights& w) {
    Flux2Model m;
    m.config_ = read_config(w);
    const Flux2Config& c = m.config_;
    const int64_t C = c.hidden;
    m.img_in = Linear::load(w["img_in"], c.in_channels, C, false);
    m.txt_in = Linear::load(w["txt_in"], c.context_dim, C, false);
    m.time_in = load_embedder(w["time_in"], C);
    if (c.guidance_embed) m.guidance_in = load_embedder(w["guidance_in"], C);
    m.double_mod_img = Linear::load(w["double_stream_modulation_img"]["lin"], C, 6 * C, false);
    m.double_mod_txt = Linear::load(w["double_stream_modulation_txt"]["lin"], C, 6 * C, false);
    m.single_mod = Linear::load(w["single_stream_modulation"]["lin"], C, 3 * C, false);
    for (int i = 0; i < c.depth; ++i)
        m.double_blocks.push_back(load_double(w["double_blocks"][i], c));
    for (int i = 0; i < c.depth_single; ++i)
        m.single_blocks.push_back(load_single(w["single_blocks"][i], c));
    m.final_adaln = Linear::load(w["final_layer"]["adaLN_modulation"]["1"], C, 2 * C, false);
    m.final_linear = Linear::load(w["final_layer"]["linear"], C, c.in_channels, false);
    w.check("FLUX.2");
    m.pages_ = w.pages();
    SD_LOG_INFO("FLUX.2: %d double + %d single blocks, width %lld (%lld heads), context %lld%s",
                c.depth, c.depth_single, (long long)C, (long long)c.heads, (long long)c.context_dim,
                c.guidance_embed ? ", guidance embedding (dev)" : "");
    return m;
}

Tensor Flux2Model::mlp(const Linear& in, const Linear& out, const Tensor& x) const {
    return out.forward(silu_gated(in.forward(x)));
}

void Flux2Model::double_block(const Flux2DoubleBlock& b, Tensor& img, Tensor& txt,
                              const Flux2Modulation& mod, const Tensor& rope) const {
    const int64_t C = config_.hidden, H = config_.heads, D = config_.head_dim;
    const Tensor img_qkv = b.img_attn.qkv.forward(modulated_norm(img, mod.img, 0, C));
    const Tensor txt_qkv = b.txt_attn.qkv.forward(modulated_norm(txt, mod.txt, 0, C));
    // Text tokens first, then the image's, each stream with its own QK norm.
    const Tensor attn = dit_attention(
        joint_heads(txt_qkv, img_qkv, 0, H, D, b.txt_attn.query_scale, b.img_attn.query_scale),
        joint_heads(txt_qkv, img_qkv, 1, H, D, b.txt_attn.key_scale, b.img_attn.key_scale),
        joint_heads(txt_qkv, img_qkv, 2, H, D), rope);
    const int64_t lt = txt.size(1), li = img.size(1);
    img = gated(img, b.img_attn.proj.forward(attn.narrow(1, lt, li)), mod.img, 2, C);
    img = gated(img, mlp(b.img_mlp_0, b.img_mlp_2, modulated_norm(img, mod.img, 3, C)), mod.img, 5,
                C);
    txt = gated(txt, b.txt_attn.proj.forward(attn.narrow(1, 0, lt)), mod.txt, 2, C);
    txt = gated(txt, mlp(b.txt_mlp_0, b.txt_mlp_2, modulated_norm(txt, mod.txt, 3, C)), mod.txt, 5,
                C);
}

Tensor Flux2Model::single_block(const Flux2SingleBlock& b, const Tensor& x, const Tensor& mod,
                                const Tensor& rope) const {
    const int64_t C = config_.hidden, H = config_.heads, D = config_.head_dim;
    const Tensor h = b.linear1.forward(modulated_norm(x, mod, 0, C));  // [1, L, 3C + 2 mlp]
    const Tensor attn = dit_attention(rms_norm(head_view(h, 0, H, D), b.query_scale, kNormEps),
                                      rms_norm(head_view(h, 1, H, D), b.key_scale, kNormEps),
                                      head_view(h, 2, H, D), rope);
    const Tensor act = silu_gated(h.narrow(2, 3 * C, 2 * config_.mlp_hidden));
    return gated(x, b.linear2.forward(concat({attn, act}, 2)), mod, 2, C);
}

Flux2Modulation Flux2Model::modulation(const Tensor& timesteps, float guidance) const {
    Tensor vec = time_in.forward(timestep_embedding(timesteps * kTimeFactor, kTimeEmbedding));
    if (config_.guidance_embed) {
        const Tensor g = Tensor::full({1}, guidance * kTimeFactor);
        vec = vec + guidance_in.forward(timestep_embedding(g, kTimeEmbedding));
    }
    const Tensor svec = silu(vec);  // every modulation reads SiLU(vec)
    return {svec, double_mod_img.forward(svec), double_mod_txt.forward(svec),
            single_mod.forward(svec)};
}

Tensor Flux2Model::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                           float guidance, const std::vector<Tensor>& refs) const {
    const Flux2Config& c = config_;
    SD_CHECK(x.dim() == 4 && x.size(0) == 1 && x.size(1) == c.in_channels,
             "FLUX.2: latent %s, want [1, %lld, h, w]", x.describe().c_str(),
             (long long)c.in_channels);
    SD_CHECK(context.dim() == 3 && context.size(0) == 1 && context.size(2) == c.context_dim,
             "FLUX.2: text context %s, want [1, L, %lld]", context.describe().c_str(),
             (long long)c.context_dim);
    const int64_t h = x.size(2), w = x.size(3);
    std::vector<Tensor> image_tokens = {patchify(x, 1, PatchLayout::ChannelsFirst)};
    std::vector<std::pair<int64_t, int64_t>> refs_hw;
    for (const Tensor& r : refs) {
        SD_CHECK(r.dim() == 4 && r.size(0) == 1 && r.size(1) == c.in_channels,
                 "FLUX.2: reference latent %s, want [1, %lld, h, w]", r.describe().c_str(),
                 (long long)c.in_channels);
        image_tokens.push_back(patchify(r, 1, PatchLayout::ChannelsFirst));
        refs_hw.emplace_back(r.size(2), r.size(3));
    }
    Tensor img =
        img_in.forward(image_tokens.size() == 1 ? image_tokens[0] : concat(image_tokens, 1));
    Tensor txt = txt_in.forward(context);
    const int64_t lt = txt.size(1);
    const Flux2Modulation mod = modulation(timesteps, guidance);
    const Tensor rope =
        rope_table(flux2_positions(lt, h, w, refs_hw, c.ref_index_scale), c.axes_dim, c.theta);
    for (const Flux2DoubleBlock& b : double_blocks) double_block(b, img, txt, mod, rope);
    Tensor tokens = concat({txt, img}, 1);
    for (const Flux2SingleBlock& b : single_blocks)
        tokens = single_block(b, tokens, mod.single, rope);

    const Tensor final_mod = final_adaln.forward(mod.svec);  // shift, scale
    const Tensor out =
        final_linear.forward(modulated_norm(tokens.narrow(1, lt, h * w), final_mod, 0, c.hidden));
    return unpatchify(out, c.in_channels, h, w, 1, PatchLayout::ChannelsFirst);
}

std::vector<float> flux2_positions(int64_t txt, int64_t h, int64_t w,
                                   const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                   float index_scale) {
    std::vector<float> ids;
    ids.reserve(static_cast<size_t>(4 * (txt + h * w)));
    for (int64_t i = 0; i < txt; ++i) ids.insert(ids.end(), {0.0f, 0.0f, 0.0f, float(i)});
    auto add_image = [&](int64_t rows, int64_t cols, float index) {
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
                ids.insert(ids.end(), {index, float(i), float(j), 0.0f});
    };
    add_image(h, w, 0.0f);
    int k = 1;
    for (const auto& [rh, rw] : refs_hw)
        add_image(rh, rw, float(static_cast<int>(k++ * index_scale)));
    return ids;
}

}  // namespace sd
