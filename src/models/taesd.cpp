#include "models/taesd.h"

#include <cmath>
#include <string>

#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

constexpr int kStages = 3;
constexpr int kBlocksPerStage = 3;

TaesdConfig read_config(const Weights& w) {
    auto conv_in = w.shape_of("decoder.layers.0.weight");
    SD_CHECK(conv_in && conv_in->size() == 4,
             "no TAESD decoder: the file has no 4-D 'decoder.layers.0.weight' (is it a TAESD "
             "tiny autoencoder?)");
    TaesdConfig c;
    c.width = (*conv_in)[0];
    c.latent_channels = (*conv_in)[1];
    SD_CHECK(c.width > 0 && c.latent_channels > 0, "TAESD decoder.layers.0.weight has shape %s",
             conv_in->to_string().c_str());
    return c;
}

std::vector<TaesdBlock> load_blocks(const Weights& w, int& index, int64_t channels) {
    std::vector<TaesdBlock> blocks;
    for (int i = 0; i < kBlocksPerStage; ++i)
        blocks.push_back(TaesdBlock::load(w[index++], channels));
    return blocks;
}

Tensor run_blocks(const std::vector<TaesdBlock>& blocks, Tensor h) {
    for (const TaesdBlock& b : blocks) h = b.forward(h);
    return h;
}

// A 64 -> 64 3x3 conv (nearly all of TAESD's work) by Winograd's F(4x4, 3x3): a quarter
// of the multiplies, errors ~1e-5 of the output's scale (ops/conv.h; the taesd reference
// case stays at 75.7 dB).
Conv2d winograd(Conv2d conv) {
    conv.options.winograd = true;
    return conv;
}

// A conv followed by a ReLU, applied in the conv's store (LeakyReLU with slope 0): no extra
// pass over the activations.
Conv2d conv_relu(Conv2d conv) {
    conv.options.leaky_relu = true;
    conv.options.negative_slope = 0.0f;
    return winograd(std::move(conv));
}

}  // namespace

TaesdBlock TaesdBlock::load(const Weights& w, int64_t channels) {
    Weights conv = w["conv"];
    return {conv_relu(Conv2d::load(conv[0], channels, channels, 3)),
            conv_relu(Conv2d::load(conv[2], channels, channels, 3)),
            conv_relu(Conv2d::load(conv[4], channels, channels, 3))};
}

// conv.0 and conv.2 carry their ReLU, conv.4 the skip and the block's ReLU (conv_relu,
// forward_add): relu(conv(relu(conv(relu(conv(x))))) + x) with no pass of its own.
Tensor TaesdBlock::forward(const Tensor& x) const {
    return conv4.forward_add(conv2.forward(conv0.forward(x)), x);
}

TaesdEncoder TaesdEncoder::load(const Weights& w, const TaesdConfig& c) {
    TaesdEncoder e;
    e.conv_in = Conv2d::load(w[0], 3, c.width, 3);
    e.block_in = TaesdBlock::load(w[1], c.width);
    int index = 2;
    for (int s = 0; s < kStages; ++s) {
        Stage stage;
        stage.down = Conv2d::load(w[index++], c.width, c.width, 3, 2, 1, /*bias=*/false);
        stage.blocks = load_blocks(w, index, c.width);
        e.stages.push_back(std::move(stage));
    }
    e.conv_out = Conv2d::load(w[index], c.width, c.latent_channels, 3);
    return e;
}

Tensor TaesdEncoder::forward(const Tensor& x) const {
    Tensor h = block_in.forward(conv_in.forward(x));
    for (const Stage& s : stages) h = run_blocks(s.blocks, s.down.forward(h));
    return conv_out.forward(h);
}

TaesdDecoder TaesdDecoder::load(const Weights& w, const TaesdConfig& c) {
    TaesdDecoder d;
    d.conv_in = conv_relu(Conv2d::load(w[0], c.latent_channels, c.width, 3));
    int index = 2;  // 1 is the ReLU
    for (int s = 0; s < kStages; ++s) {
        Stage stage;
        stage.blocks = load_blocks(w, index, c.width);
        ++index;  // the Upsample
        stage.up = winograd(Conv2d::load(w[index++], c.width, c.width, 3, 1, 1, /*bias=*/false));
        stage.up.options.upsample2x = true;
        d.stages.push_back(std::move(stage));
    }
    d.block_out = TaesdBlock::load(w[index++], c.width);
    d.conv_out = Conv2d::load(w[index], c.width, 3, 3);
    return d;
}

Tensor TaesdDecoder::forward(const Tensor& z) const {
    Tensor h = tanh(z * (1.0f / 3.0f)) * 3.0f;
    h = conv_in.forward(h);  // with its ReLU
    for (const Stage& s : stages) h = s.up.forward(run_blocks(s.blocks, std::move(h)));
    return conv_out.forward(block_out.forward(h));
}

Taesd Taesd::load(const Weights& w, bool with_encoder) {
    Taesd t;
    t.config_ = read_config(w);
    const TaesdConfig& c = t.config_;
    t.decoder_ = TaesdDecoder::load(w["decoder"]["layers"], c);
    if (with_encoder) {
        SD_CHECK(w.has("encoder.layers.0.weight"),
                 "the TAESD file has no encoder (encoder.layers.*), which img2img needs");
        t.encoder_ = TaesdEncoder::load(w["encoder"]["layers"], c);
    }
    w.check(with_encoder ? "TAESD" : "TAESD decoder");
    t.pages_ = w.pages();
    SD_LOG_INFO("TAESD: %lld latent channels, width %lld%s", (long long)c.latent_channels,
                (long long)c.width, with_encoder ? ", with encoder" : "");
    return t;
}

Tensor Taesd::decode(const Tensor& z) const {
    SD_CHECK(z.dim() == 4 && z.size(1) == config_.latent_channels,
             "TAESD decode of %s: expected [B, %lld, h, w]", z.describe().c_str(),
             (long long)config_.latent_channels);
    return decoder_.forward(z);
}

Tensor Taesd::encode(const Tensor& image01) const {
    SD_CHECK(encoder_.has_value(), "TAESD was loaded without its encoder");
    SD_CHECK(image01.dim() == 4 && image01.size(1) == 3 && image01.size(2) % 8 == 0 &&
                 image01.size(3) % 8 == 0,
             "TAESD encode of %s: expected [B, 3, H, W] with H, W multiples of 8",
             image01.describe().c_str());
    return encoder_->forward(image01);
}

}  // namespace sd
