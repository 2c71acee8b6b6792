#include "models/controlnet.h"

#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

// input_hint_block: conv at every even index, SiLU at the odd ones; the convs at 4, 8
// and 12 halve the size.
constexpr int kHintConvs = 8;

}  // namespace

ControlNet ControlNet::load(const Weights& w) {
    ControlNet net;
    auto first = w.shape_of("input_hint_block.0.weight");
    SD_CHECK(first && first->size() == 4, "no ControlNet under '%s' (no input_hint_block.0.weight)",
             w.prefix().c_str());
    net.encoder_ = UNetEncoder::load(w, "ControlNet");
    const UNetConfig& c = net.encoder_.config;
    int64_t in = (*first)[1];
    for (int i = 0; i < kHintConvs; ++i) {
        const std::string index = std::to_string(2 * i);
        const bool last = i == kHintConvs - 1;
        auto shape = w.shape_of("input_hint_block." + index + ".weight");
        const int64_t out =
            last ? c.model_channels : (shape && shape->size() == 4 ? (*shape)[0] : 0);
        const int stride = (i == 2 || i == 4 || i == 6) ? 2 : 1;
        net.hint_convs_.push_back(
            Conv2d::load(w["input_hint_block"][index], in, out, 3, stride, /*padding=*/1));
        in = out;
    }
    for (size_t i = 0; i < net.encoder_.skip_channels.size(); ++i) {
        const int64_t ch = net.encoder_.skip_channels[i];
        net.zero_convs_.push_back(
            Conv2d::load(w["zero_convs"][static_cast<int>(i)]["0"], ch, ch, 1));
    }
    const int64_t mid = net.encoder_.middle_channels();
    net.middle_block_out_ = Conv2d::load(w["middle_block_out"]["0"], mid, mid, 1);
    w.check("ControlNet");
    net.pages_ = w.pages();
    SD_LOG_INFO("ControlNet: %lld-channel hint, %zu residuals", (long long)net.hint_channels(),
                net.zero_convs_.size() + 1);
    return net;
}

std::vector<int64_t> ControlNet::residual_channels() const {
    std::vector<int64_t> out = encoder_.skip_channels;
    out.push_back(encoder_.middle_channels());
    return out;
}

Tensor ControlNet::encode_hint(const Tensor& hint) const {
    SD_CHECK(hint.dim() == 4 && hint.size(1) == hint_channels() && hint.size(2) % 8 == 0 &&
                 hint.size(3) % 8 == 0,
             "ControlNet hint %s: expected [B, %lld, H, W] with H and W multiples of 8",
             hint.describe().c_str(), (long long)hint_channels());
    Tensor h = hint;
    for (size_t i = 0; i < hint_convs_.size(); ++i) {
        h = hint_convs_[i].forward(h);
        if (i + 1 < hint_convs_.size()) h = silu(h);
    }
    return h;
}

std::vector<Tensor> ControlNet::forward(const Tensor& x, const Tensor& timesteps,
                                        const Tensor& context, const Tensor& y,
                                        const Tensor& guided_hint) const {
    const Tensor emb = encoder_.embed(x, timesteps, context, y, "ControlNet");
    SD_CHECK(guided_hint.dim() == 4 && guided_hint.size(1) == config().model_channels &&
                 guided_hint.size(2) == x.size(2) && guided_hint.size(3) == x.size(3),
             "ControlNet guided hint %s for input %s", guided_hint.describe().c_str(),
             x.describe().c_str());
    std::vector<Tensor> out;
    Tensor h = x;
    for (size_t i = 0; i < encoder_.input_blocks.size(); ++i) {
        h = encoder_.run_block(encoder_.input_blocks[i], h, emb, context);
        if (i == 0) h = h + guided_hint;
        out.push_back(zero_convs_[i].forward(h));
    }
    for (const UNetBlock& block : encoder_.middle_block)
        h = encoder_.run_block(block, h, emb, context);
    out.push_back(middle_block_out_.forward(h));
    return out;
}

}  // namespace sd
