#include "models/taehv.h"

#include <string>

#include "base/error.h"
#include "base/log.h"
#include "gpu/device_tensor.h"
#include "ops/ops.h"

namespace sd {
namespace {

constexpr int kBlocks = 3;                                // MemBlocks a stage
constexpr int64_t kDecoderWidths[] = {256, 128, 64, 64};  // stage widths, then the last
constexpr int64_t kDecoderStrides[] = {1, 2, 2};          // frames a TGrow makes of one
constexpr int64_t kEncoderWidth = 64;
constexpr int64_t kEncoderStrides[] = {2, 2, 1};  // frames a TPool makes one of

// A conv with the ReLU after it applied in its store.
Conv2d with_relu(Conv2d conv) {
    conv.options.leaky_relu = true;
    conv.options.negative_slope = 0.0f;
    return conv;
}

// pixel_unshuffle: [T, C, H p, W p] -> [T, C p^2, H, W], pixel (i, j) of a patch to channel
// c p^2 + i p + j (the row's offset outside the column's).
Tensor pixel_unshuffle(const Tensor& x, int64_t p) {
    const int64_t T = x.size(0), C = x.size(1), H = x.size(2) / p, W = x.size(3) / p;
    return permute_copy(x.reshape({T * C, H, p, W, p}), {0, 2, 4, 1, 3}).view({T, C * p * p, H, W});
}

Tensor pixel_shuffle(const Tensor& x, int64_t p) {
    const int64_t T = x.size(0), C = x.size(1) / (p * p), H = x.size(2), W = x.size(3);
    return permute_copy(x.reshape({T * C, p, p, H, W}), {0, 3, 1, 4, 2}).view({T, C, H * p, W * p});
}

std::vector<TaehvMemBlock> load_blocks(const Weights& w, int& index, int64_t channels) {
    std::vector<TaehvMemBlock> blocks;
    for (int i = 0; i < kBlocks; ++i)
        blocks.push_back(TaehvMemBlock::load(w[index++], channels, channels));
    return blocks;
}

Tensor run_blocks(const std::vector<TaehvMemBlock>& blocks, Tensor h) {
    for (const TaehvMemBlock& b : blocks) h = b.forward(h);
    return h;
}

}  // namespace

TaehvMemBlock TaehvMemBlock::load(const Weights& w, int64_t in, int64_t out) {
    Weights conv = w["conv"];
    TaehvMemBlock b{with_relu(Conv2d::load(conv[0], 2 * in, out, 3)),
                    with_relu(Conv2d::load(conv[2], out, out, 3)),
                    with_relu(Conv2d::load(conv[4], out, out, 3)),
                    {}};
    if (in != out) b.skip = Conv2d::load(w["skip"], in, out, 1, 1, 0, /*bias=*/false);
    return b;
}

Tensor TaehvMemBlock::forward(const Tensor& x) const {
    const int64_t T = x.size(0);
    // The previous frame's input beside each frame's: zeros (where x is) before the first.
    const Tensor zero = gpu::placed_like(Tensor::zeros({1, x.size(1), x.size(2), x.size(3)}), x);
    const Tensor past = T > 1 ? concat({zero, x.narrow(0, 0, T - 1)}, 0) : zero;
    const Tensor h = conv2.forward(conv0.forward(concat({x, past}, 1)));
    return conv4.forward_add(h, skip ? skip->forward(x) : x);
}

TaehvDecoder TaehvDecoder::load(const Weights& w, const TaehvConfig& c) {
    TaehvDecoder d;
    d.patch_ = c.patch;
    d.conv_in = with_relu(Conv2d::load(w[1], c.latent_channels, kDecoderWidths[0], 3));
    int index = 3;  // 2 is the ReLU
    for (int s = 0; s < 3; ++s) {
        const int64_t width = kDecoderWidths[s];
        Stage stage;
        stage.blocks = load_blocks(w, index, width);
        ++index;  // the Upsample
        stage.stride = kDecoderStrides[s];
        stage.grow = Conv2d::load(w[index++]["conv"], width, width * stage.stride, 1, 1, 0,
                                  /*bias=*/false);
        stage.conv = Conv2d::load(w[index++], width, kDecoderWidths[s + 1], 3, 1, 1,
                                  /*bias=*/false);
        stage.conv.options.upsample2x = true;
        d.stages.push_back(std::move(stage));
    }
    d.stages.back().conv = with_relu(d.stages.back().conv);  // the ReLU before conv_out
    ++index;                                                 // the ReLU: conv_out is layer 22
    d.conv_out = Conv2d::load(w[index], kDecoderWidths[3], 3 * c.patch * c.patch, 3);
    return d;
}

Tensor TaehvDecoder::forward(const Tensor& z) const {
    Tensor h = conv_in.forward(tanh(z * (1.0f / 3.0f)) * 3.0f);  // with its ReLU
    for (const Stage& s : stages) {
        h = run_blocks(s.blocks, std::move(h));
        // TGrow before the upsampling: a 1x1 conv and the frames' reshape commute with it,
        // on a quarter of the pixels. [T, C s, h, w] -> [T s, C, h, w]: frame t's channel
        // group j becomes frame t s + j.
        const Tensor grown = s.grow.forward(h);
        h = s.conv.forward(grown.view({h.size(0) * s.stride, h.size(1), h.size(2), h.size(3)}));
    }
    h = conv_out.forward(h);
    if (patch_ > 1) h = pixel_shuffle(h, patch_);
    const int64_t frames = h.size(0) - 3;
    SD_CHECK(frames > 0, "TAEHV decode: %lld latent frames make no video", (long long)z.size(0));
    return h.narrow(0, 3, frames).contiguous();
}

TaehvEncoder TaehvEncoder::load(const Weights& w, const TaehvConfig& c) {
    TaehvEncoder e;
    e.patch_ = c.patch;
    e.conv_in = with_relu(Conv2d::load(w[0], 3 * c.patch * c.patch, kEncoderWidth, 3));
    int index = 2;  // 1 is the ReLU
    for (int s = 0; s < 3; ++s) {
        Stage stage;
        stage.stride = kEncoderStrides[s];
        stage.pool = Conv2d::load(w[index++]["conv"], kEncoderWidth * stage.stride, kEncoderWidth,
                                  1, 1, 0, /*bias=*/false);
        stage.down = Conv2d::load(w[index++], kEncoderWidth, kEncoderWidth, 3, 2, 1,
                                  /*bias=*/false);
        stage.blocks = load_blocks(w, index, kEncoderWidth);
        e.stages.push_back(std::move(stage));
    }
    e.conv_out = Conv2d::load(w[index], kEncoderWidth, c.latent_channels, 3);
    return e;
}

Tensor TaehvEncoder::forward(const Tensor& frames) const {
    Tensor x = frames;
    if (const int64_t F = x.size(0); F % 4 != 0) {  // padded with the last frame
        std::vector<Tensor> parts = {x};
        for (int64_t i = F % 4; i < 4; ++i) parts.push_back(x.narrow(0, F - 1, 1));
        x = concat(parts, 0);
    }
    if (patch_ > 1) x = pixel_unshuffle(x.contiguous(), patch_);
    Tensor h = conv_in.forward(x);  // with its ReLU
    for (const Stage& s : stages) {
        // [T, C, h, w] -> [T / s, C s, h, w]: frames t s .. t s + s - 1 side by side.
        h = s.pool.forward(
            h.view({h.size(0) / s.stride, h.size(1) * s.stride, h.size(2), h.size(3)}));
        h = run_blocks(s.blocks, s.down.forward(h));
    }
    return conv_out.forward(h);
}

bool Taehv::is_taehv(const Weights& w) {
    return w.has("decoder.1.weight") && !w.has("decoder.layers.0.weight");
}

Taehv Taehv::load(const Weights& w, bool with_encoder) {
    auto conv_in = w.shape_of("decoder.1.weight");
    auto conv_out = w.shape_of("decoder.22.weight");
    SD_CHECK(conv_in && conv_in->size() == 4 && conv_out && conv_out->size() == 4,
             "no TAEHV decoder: the file has no 4-D 'decoder.1.weight' and 'decoder.22.weight' "
             "(is it a TAEHV video autoencoder, such as taew2_1?)");
    Taehv t;
    t.config_.latent_channels = (*conv_in)[1];
    const int64_t out = (*conv_out)[0];
    SD_CHECK(out == 3 || out == 12,
             "TAEHV decoder.22.weight makes %lld channels: 3 (Wan 2.1) or 12 (Wan 2.2's 2x2 "
             "patches) expected",
             (long long)out);
    t.config_.patch = out == 12 ? 2 : 1;
    t.decoder_ = TaehvDecoder::load(w["decoder"], t.config_);
    if (with_encoder) {
        SD_CHECK(w.has("encoder.0.weight"),
                 "the TAEHV file has no encoder (encoder.*), which encoding frames needs");
        t.encoder_ = TaehvEncoder::load(w["encoder"], t.config_);
    }
    w.check(with_encoder ? "TAEHV" : "TAEHV decoder");
    t.pages_ = w.pages();
    SD_LOG_INFO("TAEHV: %lld latent channels, %lldx%lld pixel patches%s",
                (long long)t.config_.latent_channels, (long long)t.config_.patch,
                (long long)t.config_.patch, with_encoder ? ", with encoder" : "");
    return t;
}

Tensor Taehv::decode(const Tensor& z) const {
    SD_CHECK(z.dim() == 4 && z.size(1) == config_.latent_channels,
             "TAEHV decode of %s: expected [T, %lld, h, w]", z.describe().c_str(),
             (long long)config_.latent_channels);
    return decoder_.forward(z.contiguous());
}

Tensor Taehv::encode(const Tensor& frames01) const {
    SD_CHECK(encoder_.has_value(), "TAEHV was loaded without its encoder");
    const int64_t side = 8 * config_.patch;
    SD_CHECK(frames01.dim() == 4 && frames01.size(1) == 3 && frames01.size(2) % side == 0 &&
                 frames01.size(3) % side == 0,
             "TAEHV encode of %s: expected [F, 3, H, W] with H, W multiples of %lld",
             frames01.describe().c_str(), (long long)side);
    return encoder_->forward(frames01.contiguous());
}

}  // namespace sd
