#include "models/flux.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "base/log.h"
#include "gpu/device_tensor.h"
#include "nn/dit_blocks.h"
#include "nn/rope.h"

namespace sd {
namespace {

constexpr float kNormEps = 1e-6f;
constexpr int64_t kTimeEmbedding = 256;
constexpr float kTimeFactor = 1000.0f;

int count_blocks(const Weights& w, const char* kind, const char* tensor) {
    int n = 0;
    while (w.has(std::string(kind) + "." + std::to_string(n) + "." + tensor)) ++n;
    return n;
}

int64_t dim_of(const Weights& w, const std::string& name, int d) {
    auto s = w.shape_of(name);
    SD_CHECK(s && static_cast<int>(s->size()) > d, "FLUX under '%s': '%s' is missing or not %d-D",
             w.prefix().c_str(), name.c_str(), d + 1);
    return (*s)[d];
}

FluxConfig read_config(const Weights& w, FluxHeads heads) {
    const bool latent = heads == FluxHeads::LatentPatches;
    SD_CHECK(!latent || w.has("img_in.weight"), "no FLUX model under '%s' (no img_in.weight)",
             w.prefix().c_str());
    SD_CHECK(w.has("txt_in.weight"), "no FLUX model under '%s' (no txt_in.weight)",
             w.prefix().c_str());
    FluxConfig c;
    c.hidden = dim_of(w, "txt_in.weight", 0);
    c.context_dim = dim_of(w, "txt_in.weight", 1);
    c.chroma = w.has("distilled_guidance_layer.in_proj.weight");
    c.vec_dim = c.chroma ? 0 : dim_of(w, "vector_in.in_layer.weight", 1);
    if (latent) {
        c.in_channels = dim_of(w, "img_in.weight", 1);
        c.out_channels = dim_of(w, "final_layer.linear.weight", 0);
    }
    c.guidance_embed = w.has("guidance_in.in_layer.weight");
    c.depth = count_blocks(w, "double_blocks", "img_attn.qkv.weight");
    c.depth_single = count_blocks(w, "single_blocks", "linear1.weight");
    c.head_dim = c.depth > 0 ? dim_of(w, "double_blocks.0.img_attn.norm.query_norm.scale", 0)
                 : c.depth_single > 0 ? dim_of(w, "single_blocks.0.norm.query_norm.scale", 0)
                                      : 128;
    c.mlp_hidden = c.depth > 0 ? dim_of(w, "double_blocks.0.img_mlp.0.weight", 0)
                   : c.depth_single > 0
                       ? dim_of(w, "single_blocks.0.linear1.weight", 0) - 3 * c.hidden
                       : 4 * c.hidden;
    SD_CHECK(c.head_dim > 0 && c.hidden % c.head_dim == 0,
             "FLUX: the QK norm width %lld does not divide the width %lld", (long long)c.head_dim,
             (long long)c.hidden);
    c.heads = c.hidden / c.head_dim;
    const int axes = std::accumulate(c.axes_dim.begin(), c.axes_dim.end(), 0);
    SD_CHECK(axes == c.head_dim, "FLUX: heads of %lld channels, but RoPE axes cover %d",
             (long long)c.head_dim, axes);
    // Fill and Canny / Depth take extra channels beside the latent's (in > out).
    SD_CHECK(
        !latent || (c.in_channels % (c.patch * c.patch) == 0 &&
                    c.out_channels % (c.patch * c.patch) == 0 && c.in_channels >= c.out_channels),
        "FLUX: img_in takes %lld values and final_layer.linear gives %lld; want multiples "
        "of %lld, no fewer in than out",
        (long long)c.in_channels, (long long)c.out_channels, (long long)(c.patch * c.patch));
    SD_CHECK(!c.chroma || (c.depth <= kChromaDoubleBlocks && c.depth_single <= kChromaSingleBlocks),
             "Chroma: %d double and %d single blocks; its modulation table holds %d and %d",
             c.depth, c.depth_single, kChromaDoubleBlocks, kChromaSingleBlocks);
    return c;
}

}  // namespace

namespace {

// time_in / guidance_in / vector_in: in_layer -> SiLU -> out_layer.
MlpEmbedder load_flux_embedder(const Weights& w, int64_t in, int64_t hidden) {
    return {Linear::load(w["in_layer"], in, hidden), Linear::load(w["out_layer"], hidden, hidden)};
}

struct KeptText {
    Tensor context;
    std::vector<float> mask;  // the kept tokens' mask values; empty when all 0
};

// The text tokens a mask lets through and their mask. A token every query skips (-inf)
// reaches no other token, and the text's own outputs are dropped at the end: left out, it
// changes nothing in the image's prediction but the work (Chroma's T5 padding: most of its 512
// tokens). All of them masked: the text as given. The mask is read on the host (a device
// context's mask too: 512 values).
KeptText kept_text(const Tensor& context, const Tensor& txt_mask) {
    const std::vector<float> m = gpu::to_host(txt_mask).to_vector();
    const auto n = static_cast<int64_t>(m.size());
    std::vector<Tensor> runs;
    std::vector<float> kept;
    for (int64_t i = 0; i < n;) {
        if (m[static_cast<size_t>(i)] == -INFINITY) {
            ++i;
            continue;
        }
        int64_t j = i;
        while (j < n && m[static_cast<size_t>(j)] != -INFINITY) ++j;
        runs.push_back(context.narrow(1, i, j - i));
        kept.insert(kept.end(), m.begin() + i, m.begin() + j);
        i = j;
    }
    if (runs.empty()) return {context, m};
    const bool zeros = std::all_of(kept.begin(), kept.end(), [](float v) { return v == 0.0f; });
    return {runs.size() == 1 ? runs[0] : concat(runs, 1), zeros ? std::vector<float>{} : kept};
}

}  // namespace

FluxSelfAttention FluxSelfAttention::load(const Weights& w, int64_t hidden, int64_t head_dim) {
    FluxSelfAttention a;
    a.qkv = Linear::load(w["qkv"], hidden, 3 * hidden);
    a.proj = Linear::load(w["proj"], hidden, hidden);
    a.query_scale = w.get("norm.query_norm.scale", {head_dim});
    a.key_scale = w.get("norm.key_norm.scale", {head_dim});
    return a;
}

FluxModel FluxModel::load(const Weights& w, FluxHeads heads) {
    FluxModel m;
    m.config_ = read_config(w, heads);
    const FluxConfig& c = m.config_;
    const int64_t C = c.hidden;
    const bool latent = heads == FluxHeads::LatentPatches;
    if (latent) m.img_in = Linear::load(w["img_in"], c.in_channels, C);
    m.txt_in = Linear::load(w["txt_in"], c.context_dim, C);
    if (c.chroma) {
        m.distilled_guidance_layer = ChromaApproximator::load(w["distilled_guidance_layer"], C);
        m.chroma_table_ =
            std::make_shared<ChromaModulationTable>(chroma_rows_used(c.depth, c.depth_single));
    } else {
        m.time_in = load_flux_embedder(w["time_in"], kTimeEmbedding, C);
        m.vector_in = load_flux_embedder(w["vector_in"], c.vec_dim, C);
    }
    if (c.guidance_embed) m.guidance_in = load_flux_embedder(w["guidance_in"], kTimeEmbedding, C);
    for (int i = 0; i < c.depth; ++i) {
        const Weights b = w["double_blocks"][i];
        FluxDoubleBlock d;
        if (!c.chroma) {
            d.img_mod = Linear::load(b["img_mod"]["lin"], C, 6 * C);
            d.txt_mod = Linear::load(b["txt_mod"]["lin"], C, 6 * C);
        }
        d.img_attn = FluxSelfAttention::load(b["img_attn"], C, c.head_dim);
        d.txt_attn = FluxSelfAttention::load(b["txt_attn"], C, c.head_dim);
        d.img_mlp_0 = Linear::load(b["img_mlp"]["0"], C, c.mlp_hidden);
        d.img_mlp_2 = Linear::load(b["img_mlp"]["2"], c.mlp_hidden, C);
        d.txt_mlp_0 = Linear::load(b["txt_mlp"]["0"], C, c.mlp_hidden);
        d.txt_mlp_2 = Linear::load(b["txt_mlp"]["2"], c.mlp_hidden, C);
        m.double_blocks.push_back(std::move(d));
    }
    for (int i = 0; i < c.depth_single; ++i) {
        const Weights b = w["single_blocks"][i];
        FluxSingleBlock s;
        s.linear1 = Linear::load(b["linear1"], C, 3 * C + c.mlp_hidden);
        s.linear2 = Linear::load(b["linear2"], C + c.mlp_hidden, C);
        if (!c.chroma) s.modulation = Linear::load(b["modulation"]["lin"], C, 3 * C);
        s.query_scale = b.get("norm.query_norm.scale", {c.head_dim});
        s.key_scale = b.get("norm.key_norm.scale", {c.head_dim});
        m.single_blocks.push_back(std::move(s));
    }
    if (latent && !c.chroma)
        m.final_adaln = Linear::load(w["final_layer"]["adaLN_modulation"]["1"], C, 2 * C);
    if (latent) m.final_linear = Linear::load(w["final_layer"]["linear"], C, c.out_channels);
    if (latent) w.check("FLUX");  // else the caller's, after its own heads
    m.pages_ = w.pages();
    SD_LOG_INFO("FLUX: %d double + %d single blocks, width %lld (%lld heads), %s", c.depth,
                c.depth_single, (long long)C, (long long)c.heads,
                c.chroma           ? "distilled guidance layer (Chroma)"
                : c.guidance_embed ? "guidance embedding (dev)"
                                   : "no guidance embedding (schnell)");
    return m;
}

FluxModel::Modulation FluxModel::modulation(const Tensor& timesteps, const Tensor& y,
                                            float guidance) const {
    const FluxConfig& c = config_;
    // Chroma's approximator reads guidance 0 whatever the request's (the reference's runner
    // zeroes it): Chroma is guided by real CFG.
    if (c.chroma) return {{}, chroma_table_->get(distilled_guidance_layer, timesteps.item(), 0.0f)};
    Tensor vec = time_in.forward(timestep_embedding(timesteps * kTimeFactor, kTimeEmbedding));
    if (c.guidance_embed) {
        const Tensor g = Tensor::full({1}, guidance * kTimeFactor);
        vec = vec + guidance_in.forward(timestep_embedding(g, kTimeEmbedding));
    }
    vec = vec + vector_in.forward(y.view({1, c.vec_dim}));
    return {silu(vec), {}};  // every modulation reads SiLU(vec)
}

void FluxModel::double_block(int i, Tensor& img, Tensor& txt, const Modulation& mod,
                             const Tensor& rope, const Tensor& mask) const {
    const FluxDoubleBlock& b = double_blocks[static_cast<size_t>(i)];
    const int64_t C = config_.hidden, H = config_.heads, D = config_.head_dim;
    const bool chroma = mod.table.defined();  // [1, 6C] each
    const Tensor im =
        chroma ? chroma_rows(mod.table, chroma_double_img_row(i), 6) : b.img_mod.forward(mod.svec);
    const Tensor tm =
        chroma ? chroma_rows(mod.table, chroma_double_txt_row(i), 6) : b.txt_mod.forward(mod.svec);
    const Tensor img_qkv = b.img_attn.qkv.forward(modulated_norm(img, im, 0, C));
    const Tensor txt_qkv = b.txt_attn.qkv.forward(modulated_norm(txt, tm, 0, C));
    // Text tokens first, then the image's, each stream with its own QK norm.
    auto normed = [&](int part, const Tensor& txt_scale, const Tensor& img_scale) {
        return concat({rms_norm(head_view(txt_qkv, part, H, D), txt_scale, kNormEps),
                       rms_norm(head_view(img_qkv, part, H, D), img_scale, kNormEps)},
                      1);
    };
    const Tensor q = normed(0, b.txt_attn.query_scale, b.img_attn.query_scale);
    const Tensor k = normed(1, b.txt_attn.key_scale, b.img_attn.key_scale);
    const Tensor v = concat({head_view(txt_qkv, 2, H, D), head_view(img_qkv, 2, H, D)}, 1);
    const Tensor attn = dit_attention(q, k, v, rope, mask);
    const int64_t lt = txt.size(1), li = img.size(1);
    img = gated(img, b.img_attn.proj.forward(attn.narrow(1, lt, li)), im, 2, C);
    img = gated(img,
                b.img_mlp_2.forward(
                    gelu(b.img_mlp_0.forward(modulated_norm(img, im, 3, C)), GeluApprox::Tanh)),
                im, 5, C);
    txt = gated(txt, b.txt_attn.proj.forward(attn.narrow(1, 0, lt)), tm, 2, C);
    txt = gated(txt,
                b.txt_mlp_2.forward(
                    gelu(b.txt_mlp_0.forward(modulated_norm(txt, tm, 3, C)), GeluApprox::Tanh)),
                tm, 5, C);
}

Tensor FluxModel::single_block(int i, const Tensor& x, const Modulation& mod, const Tensor& rope,
                               const Tensor& mask) const {
    const FluxSingleBlock& b = single_blocks[static_cast<size_t>(i)];
    const int64_t C = config_.hidden, H = config_.heads, D = config_.head_dim;
    const Tensor m = mod.table.defined() ? chroma_rows(mod.table, chroma_single_row(i), 3)
                                         : b.modulation.forward(mod.svec);  // [1, 3C]
    const Tensor h = b.linear1.forward(modulated_norm(x, m, 0, C));         // [1, L, 3C + mlp]
    const Tensor attn = dit_attention(rms_norm(head_view(h, 0, H, D), b.query_scale, kNormEps),
                                      rms_norm(head_view(h, 1, H, D), b.key_scale, kNormEps),
                                      head_view(h, 2, H, D), rope, mask);
    const Tensor mlp = gelu(h.narrow(2, 3 * C, config_.mlp_hidden), GeluApprox::Tanh);
    return gated(x, b.linear2.forward(concat({attn, mlp}, 2)), m, 2, C);
}

Tensor FluxModel::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                          const Tensor& y, float guidance, const std::vector<Tensor>& refs,
                          RefIndexMode ref_index, const Tensor& txt_mask) const {
    const FluxConfig& c = config_;
    const int64_t p = c.patch;
    SD_CHECK(x.dim() == 4 && x.size(0) == 1 && x.size(1) * p * p == c.in_channels,
             "FLUX: latent %s (with any extra input channels) does not fit img_in (%lld "
             "inputs = channels * %lld)",
             x.describe().c_str(), (long long)c.in_channels, (long long)(p * p));
    check_inputs(context, y, txt_mask);
    // The latent's channels; an extra input's follow them and are patchified with them.
    const int64_t channels = c.out_channels / (p * p), H = x.size(2), W = x.size(3);
    // Padded to whole patches (the reference's pad_to_patch_size), cropped back at the end.
    const int64_t h = (H + p - 1) / p, w = (W + p - 1) / p;
    std::vector<Tensor> image_tokens = {patchify(x, p, PatchLayout::ChannelsFirst)};
    std::vector<std::pair<int64_t, int64_t>> refs_hw;
    for (const Tensor& r : refs) {
        SD_CHECK(r.dim() == 4 && r.size(0) == 1 && r.size(1) == channels,
                 "FLUX: reference latent %s, want [1, %lld, h, w]", r.describe().c_str(),
                 (long long)channels);
        image_tokens.push_back(patchify(r, p, PatchLayout::ChannelsFirst));
        refs_hw.emplace_back(r.size(2), r.size(3));
    }
    const Tensor img =
        img_in.forward(image_tokens.size() == 1 ? image_tokens[0] : concat(image_tokens, 1));
    const Modulation mod = modulation(timesteps, y, guidance);
    const Tensor states = blocks(img, h, w, mod, context, txt_mask, refs_hw, ref_index);
    const Tensor final_mod = c.chroma ? chroma_rows(mod.table, chroma_final_row(), 2)
                                      : final_adaln.forward(mod.svec);  // shift, scale
    const Tensor out = final_linear.forward(modulated_norm(states, final_mod, 0, c.hidden));
    return unpatchify(out, channels, H, W, p, PatchLayout::ChannelsFirst);
}

Tensor FluxModel::transform(const Tensor& img, int64_t h, int64_t w, const Tensor& timesteps,
                            const Tensor& context, const Tensor& y, float guidance,
                            const Tensor& txt_mask,
                            const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                            RefIndexMode ref_index) const {
    check_inputs(context, y, txt_mask);
    return blocks(img, h, w, modulation(timesteps, y, guidance), context, txt_mask, refs_hw,
                  ref_index);
}

void FluxModel::check_inputs(const Tensor& context, const Tensor& y, const Tensor& txt_mask) const {
    const FluxConfig& c = config_;
    SD_CHECK(context.dim() == 3 && context.size(0) == 1 && context.size(2) == c.context_dim,
             "FLUX: text context %s, want [1, L, %lld]", context.describe().c_str(),
             (long long)c.context_dim);
    SD_CHECK(c.chroma || (y.defined() && y.numel() == c.vec_dim),
             "FLUX: pooled vector %s, want %lld values", y.describe().c_str(),
             (long long)c.vec_dim);
    SD_CHECK(!txt_mask.defined() || txt_mask.numel() == context.size(1),
             "FLUX: text mask %s for %lld text tokens", txt_mask.describe().c_str(),
             (long long)context.size(1));
}

Tensor FluxModel::blocks(const Tensor& img_tokens, int64_t h, int64_t w, const Modulation& mod,
                         const Tensor& context, const Tensor& txt_mask,
                         const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                         RefIndexMode ref_index) const {
    const FluxConfig& c = config_;
    SD_CHECK(img_tokens.dim() == 3 && img_tokens.size(0) == 1 && img_tokens.size(1) >= h * w &&
                 img_tokens.size(2) == c.hidden,
             "FLUX: image tokens %s for %lld x %lld patches of width %lld",
             img_tokens.describe().c_str(), (long long)h, (long long)w, (long long)c.hidden);
    Tensor img = img_tokens;
    const KeptText text = txt_mask.defined() ? kept_text(context, txt_mask) : KeptText{context, {}};
    Tensor txt = txt_in.forward(text.context);
    const int64_t lt = txt.size(1);
    const Tensor rope =
        rope_table(flux_positions(lt, h, w, c.patch, refs_hw, ref_index), c.axes_dim, c.theta);
    // The text keys' mask, then the image tokens' zeros, over every query: [1, 1, 1, L], where
    // the tokens are.
    Tensor mask;
    if (!text.mask.empty()) {
        std::vector<float> keys = text.mask;
        keys.resize(static_cast<size_t>(lt + img.size(1)), 0.0f);
        mask = gpu::placed_like(
            Tensor::from_vector({1, 1, 1, static_cast<int64_t>(keys.size())}, keys), img);
    }
    for (int i = 0; i < c.depth; ++i) double_block(i, img, txt, mod, rope, mask);
    Tensor tokens = concat({txt, img}, 1);
    for (int i = 0; i < c.depth_single; ++i) tokens = single_block(i, tokens, mod, rope, mask);
    return tokens.narrow(1, lt, h * w);
}

std::vector<float> flux_positions(int64_t txt, int64_t h, int64_t w, int64_t patch,
                                  const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                  RefIndexMode ref_index) {
    std::vector<float> ids(static_cast<size_t>(3 * txt), 0.0f);
    auto add_image = [&](int64_t rows, int64_t cols, float index, int64_t dy, int64_t dx) {
        for (int64_t i = 0; i < rows; ++i) {
            for (int64_t j = 0; j < cols; ++j) {
                ids.push_back(index);
                ids.push_back(static_cast<float>(i + dy));
                ids.push_back(static_cast<float>(j + dx));
            }
        }
    };
    add_image(h, w, 0.0f, 0, 0);
    int64_t cur_h = 0, cur_w = 0, index = 1;
    for (const auto& [rh, rw] : refs_hw) {
        int64_t dy = 0, dx = 0;
        if (ref_index == RefIndexMode::Fixed) {
            // Beside the references so far, along the side that keeps the layout squarer.
            if (rh + cur_h > rw + cur_w) {
                dx = cur_w;
            } else {
                dy = cur_h;
            }
        } else if (ref_index == RefIndexMode::Decrease) {
            --index;
        }
        add_image((rh + patch / 2) / patch, (rw + patch / 2) / patch, static_cast<float>(index), dy,
                  dx);
        if (ref_index == RefIndexMode::Increase) ++index;
        cur_h = std::max(cur_h, rh + dy);
        cur_w = std::max(cur_w, rw + dx);
    }
    return ids;
}

}  // namespace sd
