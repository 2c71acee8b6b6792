#include "models/autoencoder_kl.h"

#include <cmath>

#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

constexpr float kNormEps = 1e-6f;

// The wide 3x3 convolutions (the resnet blocks', the upsamplers') run Winograd's F(4x4, 3x3):
// 2.5-3.5x faster at 128 .. 512 channels. conv_in and conv_out, with 3 .. 16 channels on one
// side, are not faster that way (measured) and keep the direct path.
Conv2d wide_conv3x3(const Weights& w, int64_t in, int64_t out) {
    Conv2d c = Conv2d::load(w, in, out, 3);
    c.options.winograd = true;
    return c;
}

VaeConfig read_config(const Weights& w) {
    VaeConfig c;
    auto conv_in = w.shape_of("decoder.conv_in.weight");
    auto conv_out = w.shape_of("decoder.conv_out.weight");
    SD_CHECK(conv_in && conv_out && conv_in->size() == 4 && conv_out->size() == 4,
             "no VAE decoder under '%s'", w.prefix().c_str());
    c.z_channels = (*conv_in)[1];
    c.image_channels = (*conv_out)[0];
    c.ch = (*conv_out)[1];  // conv_out reads the full-resolution level's width = ch * ch_mult[0]
    c.ch_mult.clear();
    for (int level = 0;; ++level) {
        auto shape = w.shape_of("decoder.up." + std::to_string(level) + ".block.0.conv2.weight");
        if (!shape) break;
        c.ch_mult.push_back((*shape)[0] / c.ch);
    }
    SD_CHECK(!c.ch_mult.empty(), "VAE under '%s' has no decoder levels", w.prefix().c_str());
    c.num_res_blocks = 0;
    while (w.has("decoder.up.0.block." + std::to_string(c.num_res_blocks) + ".conv1.weight"))
        ++c.num_res_blocks;
    c.num_res_blocks -= 1;  // the decoder has one block more a level than the encoder
    c.has_quant_conv = w.has("post_quant_conv.weight");
    return c;
}

}  // namespace

VaeResnetBlock VaeResnetBlock::load(const Weights& w, int64_t in, int64_t out) {
    VaeResnetBlock b;
    b.norm1 = GroupNorm::load(w["norm1"], 32, in, kNormEps);
    b.conv1 = wide_conv3x3(w["conv1"], in, out);
    b.norm2 = GroupNorm::load(w["norm2"], 32, out, kNormEps);
    b.conv2 = wide_conv3x3(w["conv2"], out, out);
    if (in != out) b.nin_shortcut = Conv2d::load(w["nin_shortcut"], in, out, 1);
    return b;
}

// x is taken by value: with the shortcut computed first, a block that changes the width
// normalises x in its own memory (the decoder's full-resolution blocks hold 100s of MiB).
Tensor VaeResnetBlock::forward(Tensor x) const {
    const Tensor skip = nin_shortcut ? nin_shortcut->forward(x) : x;
    Tensor h = conv1.forward(norm1.forward(std::move(x), /*silu=*/true));
    h = conv2.forward(norm2.forward(std::move(h), /*silu=*/true));
    return skip + h;
}

VaeAttnBlock VaeAttnBlock::load(const Weights& w, int64_t channels) {
    VaeAttnBlock a;
    a.norm = GroupNorm::load(w["norm"], 32, channels, kNormEps);
    a.q = Conv2d::load(w["q"], channels, channels, 1);
    a.k = Conv2d::load(w["k"], channels, channels, 1);
    a.v = Conv2d::load(w["v"], channels, channels, 1);
    a.proj_out = Conv2d::load(w["proj_out"], channels, channels, 1);
    return a;
}

// Single-head attention over the H*W positions, scale C^-1/2.
Tensor VaeAttnBlock::forward(const Tensor& x) const {
    const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    Tensor n = norm.forward(x);
    auto tokens = [&](const Conv2d& proj) {  // [B, C, H, W] -> [B, 1, HW, C]
        return proj.forward(n).view({b, 1, c, h * w}).transpose(2, 3);
    };
    Tensor out = scaled_dot_product_attention(tokens(q), tokens(k), tokens(v));  // [B, 1, HW, C]
    out = permute_copy(out.view({b, h * w, c}), {0, 2, 1}).view({b, c, h, w});
    return x + proj_out.forward(out);
}

VaeMid VaeMid::load(const Weights& w, int64_t channels) {
    return {VaeResnetBlock::load(w["block_1"], channels, channels),
            VaeResnetBlock::load(w["block_2"], channels, channels),
            VaeAttnBlock::load(w["attn_1"], channels)};
}

Tensor VaeMid::forward(const Tensor& x) const {
    return block_2.forward(attn_1.forward(block_1.forward(x)));
}

VaeDecoder VaeDecoder::load(const Weights& w, const VaeConfig& c) {
    VaeDecoder d;
    const int levels = static_cast<int>(c.ch_mult.size());
    int64_t ch = c.ch * c.ch_mult.back();
    d.conv_in = Conv2d::load(w["conv_in"], c.z_channels, ch, 3);
    d.mid = VaeMid::load(w["mid"], ch);
    d.up.resize(levels);
    for (int level = levels - 1; level >= 0; --level) {
        const int64_t out = c.ch * c.ch_mult[level];
        Weights u = w["up"][level];
        for (int i = 0; i <= c.num_res_blocks; ++i) {
            d.up[level].blocks.push_back(VaeResnetBlock::load(u["block"][i], ch, out));
            ch = out;
        }
        if (level != 0) {  // nearest 2x then conv; the conv reads its input upsampled
            d.up[level].upsample = wide_conv3x3(u["upsample"]["conv"], ch, ch);
            d.up[level].upsample->options.upsample2x = true;
        }
    }
    d.norm_out = GroupNorm::load(w["norm_out"], 32, ch, kNormEps);
    d.conv_out = Conv2d::load(w["conv_out"], ch, c.image_channels, 3);
    return d;
}

Tensor VaeDecoder::forward(const Tensor& z) const {
    Tensor h = mid.forward(conv_in.forward(z));
    for (int level = static_cast<int>(up.size()) - 1; level >= 0; --level) {
        for (const VaeResnetBlock& block : up[level].blocks) h = block.forward(std::move(h));
        if (up[level].upsample) h = up[level].upsample->forward(h);
    }
    return conv_out.forward(norm_out.forward(h, /*silu=*/true));
}

VaeEncoder VaeEncoder::load(const Weights& w, const VaeConfig& c) {
    VaeEncoder e;
    const int levels = static_cast<int>(c.ch_mult.size());
    e.conv_in = Conv2d::load(w["conv_in"], c.image_channels, c.ch, 3);
    int64_t ch = c.ch;
    e.down.resize(levels);
    for (int level = 0; level < levels; ++level) {
        const int64_t out = c.ch * c.ch_mult[level];
        Weights d = w["down"][level];
        for (int i = 0; i < c.num_res_blocks; ++i) {
            e.down[level].blocks.push_back(VaeResnetBlock::load(d["block"][i], ch, out));
            ch = out;
        }
        if (level != levels - 1)
            e.down[level].downsample = Conv2d::load(d["downsample"]["conv"], ch, ch, 3, 2, 0);
    }
    e.mid = VaeMid::load(w["mid"], ch);
    e.norm_out = GroupNorm::load(w["norm_out"], 32, ch, kNormEps);
    e.conv_out = Conv2d::load(w["conv_out"], ch, 2 * c.z_channels, 3);
    return e;
}

Tensor VaeEncoder::forward(const Tensor& x) const {
    Tensor h = conv_in.forward(x);
    for (const Level& level : down) {
        for (const VaeResnetBlock& block : level.blocks) h = block.forward(std::move(h));
        if (level.downsample) h = level.downsample->forward(pad2d(h, 0, 1, 0, 1));
    }
    h = mid.forward(h);
    return conv_out.forward(norm_out.forward(h, /*silu=*/true));
}

AutoencoderKL AutoencoderKL::load(const Weights& w, bool with_encoder) {
    AutoencoderKL vae;
    vae.config_ = read_config(w);
    const VaeConfig& c = vae.config_;
    if (c.has_quant_conv) {
        vae.post_quant_conv = Conv2d::load(w["post_quant_conv"], c.z_channels, c.z_channels, 1);
        if (with_encoder)
            vae.quant_conv = Conv2d::load(w["quant_conv"], 2 * c.z_channels, 2 * c.z_channels, 1);
    }
    // FLUX.2's file carries BatchNorm statistics of its patched latents that the reference
    // does not read (it normalises by fixed tables, the family's latent format).
    for (const char* name : {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"})
        w.skip(name);
    vae.decoder_ = VaeDecoder::load(w["decoder"], c);
    if (with_encoder) vae.encoder_ = VaeEncoder::load(w["encoder"], c);
    // Unused-tensor warnings only make sense when the encoder is built too.
    w.check(with_encoder ? "VAE" : "VAE decoder");
    vae.pages_ = w.pages();
    SD_LOG_INFO("VAE: %lld latent channels, width %lld, %zu levels%s", (long long)c.z_channels,
                (long long)c.ch, c.ch_mult.size(), with_encoder ? ", with encoder" : "");
    return vae;
}

Tensor AutoencoderKL::decode(const Tensor& z) const {
    SD_CHECK(z.dim() == 4 && z.size(1) == config_.z_channels,
             "VAE decode of %s: expected [B, %lld, h, w]", z.describe().c_str(),
             (long long)config_.z_channels);
    return decoder_.forward(post_quant_conv ? post_quant_conv->forward(z) : z);
}

std::pair<Tensor, Tensor> AutoencoderKL::encode(const Tensor& x) const {
    SD_CHECK(encoder_.has_value(), "the VAE was loaded without its encoder");
    SD_CHECK(x.dim() == 4 && x.size(1) == config_.image_channels && x.size(2) % 8 == 0 &&
                 x.size(3) % 8 == 0,
             "VAE encode of %s: expected [B, %lld, H, W] with H, W multiples of 8",
             x.describe().c_str(), (long long)config_.image_channels);
    Tensor moments = encoder_->forward(x);
    if (quant_conv) moments = quant_conv->forward(moments);
    std::vector<Tensor> parts = chunk(moments, 2, 1);
    return {parts[0].contiguous(), parts[1].contiguous()};
}

}  // namespace sd
