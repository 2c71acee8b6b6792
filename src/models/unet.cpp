#include "models/unet.h"

#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

int64_t heads_for(const UNetConfig& c, int64_t channels) {
    return c.head_channels > 0 ? channels / c.head_channels : c.num_heads;
}

// The number of ResBlocks a level: input blocks 1.. up to the first Downsample ("N.0.op").
int count_res_blocks(const Weights& w) {
    int n = 0;
    while (w.has("input_blocks." + std::to_string(n + 1) + ".0.in_layers.0.weight")) ++n;
    for (int i = 1; i <= n; ++i) {
        if (w.has("input_blocks." + std::to_string(i) + ".0.op.weight")) return i - 1;
    }
    return n;
}

// The cross-attention context width: from the first transformer block found.
int64_t find_context_dim(const Weights& w, int input_blocks) {
    std::vector<std::string> blocks = {"middle_block.1."};
    for (int i = 1; i < input_blocks; ++i)
        blocks.push_back("input_blocks." + std::to_string(i) + ".1.");
    for (const std::string& b : blocks) {
        if (auto to_k = w.shape_of(b + "transformer_blocks.0.attn2.to_k.weight");
            to_k && to_k->size() == 2)
            return (*to_k)[1];
    }
    return 0;
}

UNetConfig read_config(const Weights& w) {
    UNetConfig c;
    auto conv_in = w.shape_of("input_blocks.0.0.weight");
    SD_CHECK(conv_in && conv_in->size() == 4, "no UNet under '%s'", w.prefix().c_str());
    c.model_channels = (*conv_in)[0];
    c.in_channels = (*conv_in)[1];
    if (auto out = w.shape_of("out.2.weight"); out && out->size() == 4) c.out_channels = (*out)[0];
    c.num_res_blocks = count_res_blocks(w);
    SD_CHECK(c.num_res_blocks >= 1, "UNet under '%s' has no ResBlock in input_blocks.1",
             w.prefix().c_str());
    // Levels: the first ResBlock of each level gives its width; a level has attention when
    // its first ResBlock's input block has a transformer ("<index>.1").
    c.channel_mult.clear();
    c.attention_at_level.clear();
    const int per_level = c.num_res_blocks + 1;
    for (int level = 0;; ++level) {
        int first = per_level * level + 1;
        auto out = w.shape_of("input_blocks." + std::to_string(first) + ".0.out_layers.3.weight");
        if (!out || out->size() == 0) break;
        c.channel_mult.push_back((*out)[0] / c.model_channels);
        c.attention_at_level.push_back(
            w.has("input_blocks." + std::to_string(first) + ".1.norm.weight"));
    }
    SD_CHECK(!c.channel_mult.empty(), "UNet under '%s' has no input blocks", w.prefix().c_str());
    const int input_blocks = per_level * static_cast<int>(c.channel_mult.size());
    c.context_dim = find_context_dim(w, input_blocks);
    SD_CHECK(c.context_dim > 0, "UNet under '%s' has no cross-attention (attn2.to_k)",
             w.prefix().c_str());
    for (int i = 1; i < input_blocks; ++i) {
        auto proj_in = w.shape_of("input_blocks." + std::to_string(i) + ".1.proj_in.weight");
        if (!proj_in) proj_in = w.shape_of("middle_block.1.proj_in.weight");
        if (proj_in) {
            c.linear_projection = proj_in->size() == 2;
            break;
        }
    }
    if (auto adm = w.shape_of("label_emb.0.0.weight"); adm && adm->size() == 2)
        c.adm_in_channels = (*adm)[1];
    // SD 1.x (context 768) uses 8 heads at every width; later models use 64-channel heads.
    if (c.context_dim != 768) c.head_channels = 64;
    return c;
}

}  // namespace

ResBlock ResBlock::load(const Weights& w, int64_t in, int64_t out, int64_t emb_dim) {
    ResBlock b;
    b.in_norm = GroupNorm::load(w["in_layers"]["0"], 32, in, 1e-5f);
    b.in_conv = Conv2d::load(w["in_layers"]["2"], in, out, 3);
    b.emb_proj = Linear::load(w["emb_layers"]["1"], emb_dim, out);
    b.out_norm = GroupNorm::load(w["out_layers"]["0"], 32, out, 1e-5f);
    b.out_conv = Conv2d::load(w["out_layers"]["3"], out, out, 3);
    if (in != out) b.skip_connection = Conv2d::load(w["skip_connection"], in, out, 1);
    return b;
}

Tensor ResBlock::forward(const Tensor& x, const Tensor& emb) const {
    Tensor h = in_conv.forward(in_norm.forward(x, /*silu=*/true));
    Tensor e = emb_proj.forward(silu(emb));  // [B, out]
    h = h + e.unsqueeze(-1).unsqueeze(-1);
    h = out_conv.forward(out_norm.forward(h, /*silu=*/true));
    return (skip_connection ? skip_connection->forward(x) : x) + h;
}

CrossAttention CrossAttention::load(const Weights& w, int64_t dim, int64_t context_dim,
                                    int64_t heads) {
    CrossAttention a;
    a.to_q = Linear::load(w["to_q"], dim, dim, false);
    a.to_k = Linear::load(w["to_k"], context_dim, dim, false);
    a.to_v = Linear::load(w["to_v"], context_dim, dim, false);
    a.to_out = Linear::load(w["to_out"]["0"], dim, dim);
    a.heads = heads;
    return a;
}

Tensor CrossAttention::forward(const Tensor& x, const Tensor& context) const {
    const Tensor& ctx = context.defined() ? context : x;
    Tensor out = multi_head_attention(to_q.forward(x), to_k.forward(ctx), to_v.forward(ctx), heads);
    return to_out.forward(out);
}

Tensor BasicTransformerBlock::forward(const Tensor& x, const Tensor& context) const {
    Tensor h = x + attn1.forward(norm1.forward(x), {});
    h = h + attn2.forward(norm2.forward(h), context);
    return h + ff_out.forward(geglu(ff_proj.forward(norm3.forward(h))));
}

SpatialTransformer SpatialTransformer::load(const Weights& w, int64_t channels,
                                            const UNetConfig& c) {
    SpatialTransformer t;
    t.norm = GroupNorm::load(w["norm"], 32, channels, 1e-6f);
    t.linear = c.linear_projection;
    if (t.linear) {
        t.proj_in_linear = Linear::load(w["proj_in"], channels, channels);
        t.proj_out_linear = Linear::load(w["proj_out"], channels, channels);
    } else {
        t.proj_in_conv = Conv2d::load(w["proj_in"], channels, channels, 1);
        t.proj_out_conv = Conv2d::load(w["proj_out"], channels, channels, 1);
    }
    const int64_t heads = heads_for(c, channels), inner = 4 * channels;
    for (int i = 0; w.has("transformer_blocks." + std::to_string(i) + ".norm1.weight"); ++i) {
        Weights b = w["transformer_blocks"][i];
        BasicTransformerBlock block;
        block.norm1 = LayerNorm::load(b["norm1"], channels, 1e-5f);
        block.norm2 = LayerNorm::load(b["norm2"], channels, 1e-5f);
        block.norm3 = LayerNorm::load(b["norm3"], channels, 1e-5f);
        block.attn1 = CrossAttention::load(b["attn1"], channels, channels, heads);
        block.attn2 = CrossAttention::load(b["attn2"], channels, c.context_dim, heads);
        block.ff_proj = Linear::load(b["ff"]["net"]["0"]["proj"], channels, 2 * inner);
        block.ff_out = Linear::load(b["ff"]["net"]["2"], inner, channels);
        t.blocks.push_back(std::move(block));
    }
    return t;
}

Tensor SpatialTransformer::forward(const Tensor& x, const Tensor& context) const {
    const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    Tensor t = norm.forward(x);
    if (!linear) t = proj_in_conv.forward(t);
    t = permute_copy(t.view({b, c, h * w}), {0, 2, 1});  // b c (h w) -> b (h w) c
    if (linear) t = proj_in_linear.forward(t);
    for (const BasicTransformerBlock& block : blocks) t = block.forward(t, context);
    if (linear) t = proj_out_linear.forward(t);
    t = permute_copy(t, {0, 2, 1}).view({b, c, h, w});
    if (!linear) t = proj_out_conv.forward(t);
    return t + x;
}

UNetEncoder UNetEncoder::load(const Weights& w, const char* what) {
    UNetEncoder e;
    e.config = read_config(w);
    const UNetConfig& c = e.config;
    const int64_t emb_dim = 4 * c.model_channels;
    e.time_embed_0 = Linear::load(w["time_embed"]["0"], c.model_channels, emb_dim);
    e.time_embed_2 = Linear::load(w["time_embed"]["2"], emb_dim, emb_dim);
    if (c.adm_in_channels > 0) {
        e.label_emb_0 = Linear::load(w["label_emb"]["0"]["0"], c.adm_in_channels, emb_dim);
        e.label_emb_2 = Linear::load(w["label_emb"]["0"]["2"], emb_dim, emb_dim);
    }
    // Input blocks: conv_in, then per level num_res_blocks ResBlocks (+ attention) and a
    // Downsample except at the last level.
    int index = 0;
    UNetBlock conv_in;
    conv_in.conv = Conv2d::load(w["input_blocks"]["0"]["0"], c.in_channels, c.model_channels, 3);
    e.input_blocks.push_back(std::move(conv_in));
    e.skip_channels.push_back(c.model_channels);
    int64_t ch = c.model_channels;
    const int levels = static_cast<int>(c.channel_mult.size());
    for (int level = 0; level < levels; ++level) {
        const int64_t out = c.model_channels * c.channel_mult[level];
        for (int r = 0; r < c.num_res_blocks; ++r) {
            Weights b = w["input_blocks"][++index];
            UNetBlock block;
            block.res = ResBlock::load(b["0"], ch, out, emb_dim);
            if (c.attention_at_level[level] && b.has("1.norm.weight"))
                block.attention = SpatialTransformer::load(b["1"], out, c);
            e.input_blocks.push_back(std::move(block));
            ch = out;
            e.skip_channels.push_back(ch);
        }
        if (level != levels - 1) {
            UNetBlock down;
            down.conv =
                Conv2d::load(w["input_blocks"][++index]["0"]["op"], ch, ch, 3, /*stride=*/2);
            e.input_blocks.push_back(std::move(down));
            e.skip_channels.push_back(ch);
        }
    }
    // The middle block: ResBlock, SpatialTransformer, ResBlock (middle_block.0/1/2).
    // SDXL-layout distillations (Vega) drop the transformer but keep the names of the two
    // ResBlocks; some tiny UNets drop the block.
    if (w.has("middle_block.0.in_layers.0.weight")) {
        UNetBlock res1;
        res1.res = ResBlock::load(w["middle_block"]["0"], ch, ch, emb_dim);
        e.middle_block.push_back(std::move(res1));
        if (w.has("middle_block.1.norm.weight")) {
            UNetBlock attn;
            attn.attention = SpatialTransformer::load(w["middle_block"]["1"], ch, c);
            e.middle_block.push_back(std::move(attn));
        }
        UNetBlock res2;
        res2.res = ResBlock::load(w["middle_block"]["2"], ch, ch, emb_dim);
        e.middle_block.push_back(std::move(res2));
    }
    SD_LOG_INFO(
        "%s: %lld -> %lld channels, width %lld, %d levels of %d res blocks, context %lld, %s "
        "heads, %s projections%s",
        what, (long long)c.in_channels, (long long)c.out_channels, (long long)c.model_channels,
        levels, c.num_res_blocks, (long long)c.context_dim,
        c.head_channels > 0 ? "64-channel" : "8", c.linear_projection ? "linear" : "conv",
        c.adm_in_channels > 0 ? ", label_emb" : "");
    return e;
}

Tensor UNetEncoder::embed(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                          const Tensor& y, const char* what) const {
    const UNetConfig& c = config;
    SD_CHECK(x.dim() == 4 && x.size(1) == c.in_channels, "%s input %s: expected [B, %lld, H, W]",
             what, x.describe().c_str(), (long long)c.in_channels);
    SD_CHECK(x.size(2) % 8 == 0 && x.size(3) % 8 == 0,
             "%s input %s: H and W must be multiples of 8", what, x.describe().c_str());
    SD_CHECK(timesteps.dim() == 1 && timesteps.size(0) == x.size(0), "%s timesteps %s for input %s",
             what, timesteps.describe().c_str(), x.describe().c_str());
    SD_CHECK(context.dim() == 3 && context.size(0) == x.size(0) && context.size(2) == c.context_dim,
             "%s context %s: expected [%lld, L, %lld]", what, context.describe().c_str(),
             (long long)x.size(0), (long long)c.context_dim);
    Tensor emb = timestep_embedding(timesteps, c.model_channels);
    emb = time_embed_2.forward(silu(time_embed_0.forward(emb)));
    if (c.adm_in_channels > 0) {
        SD_CHECK(
            y.defined() && y.dim() == 2 && y.size(0) == x.size(0) && y.size(1) == c.adm_in_channels,
            "%s vector y %s: expected [%lld, %lld]", what,
            y.defined() ? y.describe().c_str() : "(none)", (long long)x.size(0),
            (long long)c.adm_in_channels);
        emb = emb + label_emb_2.forward(silu(label_emb_0.forward(y)));
    }
    return emb;
}

Tensor UNetEncoder::run_block(const UNetBlock& block, Tensor h, const Tensor& emb,
                              const Tensor& context) const {
    if (block.res) h = block.res->forward(h, emb);
    if (block.attention) h = block.attention->forward(h, context);
    if (block.conv) h = block.conv->forward(h);  // a Downsample or an Upsample
    return h;
}

UNet UNet::load(const Weights& w) {
    UNet u;
    u.encoder_ = UNetEncoder::load(w, "UNet");
    const UNetConfig& c = u.encoder_.config;
    const int64_t emb_dim = 4 * c.model_channels;
    // Output blocks: per level (deepest first) num_res_blocks + 1 ResBlocks, each on the
    // concatenation with a skip, (+ attention), and an Upsample closing every level but 0.
    std::vector<int64_t> skips = u.encoder_.skip_channels;
    int64_t ch = u.encoder_.middle_channels();
    int index = -1;
    const int levels = static_cast<int>(c.channel_mult.size());
    for (int level = levels - 1; level >= 0; --level) {
        const int64_t out = c.model_channels * c.channel_mult[level];
        for (int r = 0; r <= c.num_res_blocks; ++r) {
            Weights b = w["output_blocks"][++index];
            const int64_t skip = skips.back();
            skips.pop_back();
            UNetBlock block;
            block.res = ResBlock::load(b["0"], ch + skip, out, emb_dim);
            ch = out;
            int part = 1;
            if (c.attention_at_level[level] && b.has("1.norm.weight"))
                block.attention = SpatialTransformer::load(b[part++], out, c);
            if (level != 0 && r == c.num_res_blocks) {
                // Upsample: nearest 2x, then conv; the conv reads its input upsampled.
                block.conv = Conv2d::load(b[part]["conv"], ch, ch, 3);
                block.conv->options.upsample2x = true;
            }
            u.output_blocks.push_back(std::move(block));
        }
    }
    u.out_norm = GroupNorm::load(w["out"]["0"], 32, ch, 1e-5f);
    u.out_conv = Conv2d::load(w["out"]["2"], ch, c.out_channels, 3);
    w.check("UNet");
    u.pages_ = w.pages();
    return u;
}

std::vector<int64_t> UNet::control_channels() const {
    std::vector<int64_t> out = encoder_.skip_channels;
    out.push_back(encoder_.middle_channels());
    return out;
}

std::vector<int> UNet::transformer_depths() const {
    std::vector<int> out;
    for (const auto* blocks : {&encoder_.input_blocks, &encoder_.middle_block, &output_blocks}) {
        for (const UNetBlock& b : *blocks) {
            if (b.attention) out.push_back(static_cast<int>(b.attention->blocks.size()));
        }
    }
    return out;
}

Tensor UNet::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                     const Tensor& y, const UNetControl* control) const {
    const Tensor emb = encoder_.embed(x, timesteps, context, y, "UNet");
    const size_t n_skips = encoder_.input_blocks.size();
    if (control) {
        SD_CHECK(control->residuals.size() == n_skips + 1,
                 "UNet control: %zu residuals for %zu skips and the middle block",
                 control->residuals.size(), n_skips);
    }
    // A control residual joins its skip (or the middle block's output) times strength.
    auto controlled = [&](Tensor h, size_t i) {
        return control ? h + control->residuals[i] * control->strength : h;
    };
    std::vector<Tensor> skips;
    Tensor h = x;
    for (const UNetBlock& block : encoder_.input_blocks) {
        h = encoder_.run_block(block, h, emb, context);
        skips.push_back(h);
    }
    for (const UNetBlock& block : encoder_.middle_block)
        h = encoder_.run_block(block, h, emb, context);
    h = controlled(h, n_skips);
    for (const UNetBlock& block : output_blocks) {
        h = concat({h, controlled(skips.back(), skips.size() - 1)}, 1);
        skips.pop_back();
        h = encoder_.run_block(block, h, emb, context);
    }
    return out_conv.forward(out_norm.forward(h, /*silu=*/true));
}

}  // namespace sd
