#include "models/esrgan.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"
#include "base/log.h"
#include "gpu/device_tensor.h"
#include "ops/ops.h"

namespace sd {
namespace {

constexpr float kResidualScale = 0.2f;
constexpr float kLeakySlope = 0.2f;
const char* const kPrefixes[] = {"", "params_ema.", "params."};

// The number after `head` in names starting with prefix + head ("body.12.rdb1..." -> 12),
// the largest one seen, or -1. With `tail`, only names continuing with it after the number.
int max_index(const ModelFiles& files, const std::string& head, const std::string& tail = "") {
    int best = -1;
    for (const std::string& name : files.names()) {
        if (name.compare(0, head.size(), head) != 0) continue;
        const char* digits = name.c_str() + head.size();
        char* end = nullptr;
        const long v = std::strtol(digits, &end, 10);
        if (end == digits || *end != '.' || v < 0 || v > 100000) continue;
        if (!tail.empty() && std::string(end + 1).compare(0, tail.size(), tail) != 0) continue;
        best = std::max(best, static_cast<int>(v));
    }
    return best;
}

// A 3x3 convolution's weight shape [out, in, 3, 3], or an error naming the tensor.
Shape conv_shape(const ModelFiles& files, const std::string& name, const std::string& what) {
    const TensorRecord* r = files.find(name);
    SD_CHECK(r != nullptr, "%s: the ESRGAN tensor %s is missing", what.c_str(), name.c_str());
    SD_CHECK(r->shape.size() == 4 && r->shape[2] == 3 && r->shape[3] == 3 && r->shape[0] > 0 &&
                 r->shape[1] > 0,
             "%s: %s is %s, not a 3x3 convolution weight", what.c_str(), name.c_str(),
             r->shape.to_string().c_str());
    return r->shape;
}

// Names of the parts in either naming scheme.
struct PartNames {
    std::string first, body_conv, hr, last;
    std::vector<std::string> up;
};

PartNames part_names(const EsrganLayout& l) {
    PartNames n;
    if (!l.original_names) {
        n = {"conv_first", "conv_body", "conv_hr", "conv_last", {}};
        for (int u = 0; u < l.upsamples; ++u) n.up.push_back("conv_up" + std::to_string(u + 1));
        return n;
    }
    // ESRGAN's Sequential: 0 conv, 1 body (shortcut), then per stage upsample / conv / lrelu,
    // then the HR conv, an lrelu and the last conv.
    n.first = "model.0";
    n.body_conv = "model.1.sub." + std::to_string(l.num_blocks);
    for (int u = 0; u < l.upsamples; ++u) n.up.push_back("model." + std::to_string(3 + 3 * u));
    n.hr = "model." + std::to_string(2 + 3 * l.upsamples);
    n.last = "model." + std::to_string(4 + 3 * l.upsamples);
    return n;
}

std::string block_scope(const EsrganLayout& l, int block, int rdb) {
    const std::string b = std::to_string(block), k = std::to_string(rdb + 1);
    return l.original_names ? "model.1.sub." + b + ".RDB" + k : "body." + b + ".rdb" + k;
}

}  // namespace

EsrganLayout detect_esrgan(const ModelFiles& files, const std::string& what) {
    EsrganLayout l;
    bool found = false;
    for (const char* prefix : kPrefixes) {
        l.prefix = prefix;
        if (files.find(l.prefix + "conv_first.weight")) {
            found = true;
            break;
        }
        if (files.find(l.prefix + "model.0.weight") &&
            files.find(l.prefix + "model.1.sub.0.RDB1.conv1.0.weight")) {
            l.original_names = true;
            found = true;
            break;
        }
    }
    SD_CHECK(found,
             "%s is not an ESRGAN model: it has neither conv_first.weight (Real-ESRGAN) nor "
             "model.0.weight with model.1.sub.N.RDBK blocks (ESRGAN) among its %zu tensors",
             what.c_str(), files.size());
    const std::string& p = l.prefix;
    if (l.original_names) {
        l.num_blocks = max_index(files, p + "model.1.sub.", "RDB") + 1;
        const int last = max_index(files, p + "model.");
        SD_CHECK(last >= 4 && (last - 4) % 3 == 0,
                 "%s: ESRGAN's last layer is model.%d; expected model.4, model.7 or model.10",
                 what.c_str(), last);
        l.upsamples = (last - 4) / 3;
    } else {
        l.num_blocks = max_index(files, p + "body.") + 1;
        l.upsamples = files.find(p + "conv_up2.weight")   ? 2
                      : files.find(p + "conv_up1.weight") ? 1
                                                          : 0;
    }
    SD_CHECK(l.num_blocks > 0, "%s: the ESRGAN has no RRDB blocks", what.c_str());
    const PartNames names = part_names(l);
    const Shape first = conv_shape(files, p + names.first + ".weight", what);
    const Shape last = conv_shape(files, p + names.last + ".weight", what);
    const std::string conv1 = p + block_scope(l, 0, 0) + (l.original_names ? ".conv1.0" : ".conv1");
    const Shape grow = conv_shape(files, conv1 + ".weight", what);
    l.num_feat = first[0];
    l.in_channels = first[1];
    l.out_channels = last[0];
    l.num_grow = grow[0];
    const int64_t ratio = l.in_channels / l.out_channels;
    SD_CHECK(l.in_channels % l.out_channels == 0 && (ratio == 1 || ratio == 4 || ratio == 16),
             "%s: conv_first reads %lld channels and conv_last writes %lld; expected equal "
             "counts, or 4x / 16x (a pixel-unshuffled input)",
             what.c_str(), (long long)l.in_channels, (long long)l.out_channels);
    l.unshuffle = ratio == 1 ? 1 : ratio == 4 ? 2 : 4;
    const int up = 1 << l.upsamples;
    SD_CHECK(up % l.unshuffle == 0,
             "%s: %d upsampling stages after a %dx pixel unshuffle would shrink the image",
             what.c_str(), l.upsamples, l.unshuffle);
    l.scale = up / l.unshuffle;
    return l;
}

ResidualDenseBlock ResidualDenseBlock::load(const Weights& w, const EsrganLayout& l) {
    ResidualDenseBlock b;
    for (int k = 0; k < 5; ++k) {
        const int64_t in = l.num_feat + k * l.num_grow, out = k < 4 ? l.num_grow : l.num_feat;
        Weights conv = w["conv" + std::to_string(k + 1)];
        b.conv[k] = Conv2d::load(l.original_names ? conv["0"] : conv, in, out, 3);
        if (k < 4) {
            b.conv[k].options.leaky_relu = true;
            b.conv[k].options.negative_slope = kLeakySlope;
        }
    }
    return b;
}

void ResidualDenseBlock::forward(const Tensor& buf, const Tensor& out) const {
    const int64_t f = out.size(1), g = conv[0].weight.size(0);
    for (int k = 0; k < 4; ++k)
        conv[k].forward_into(buf.narrow(1, 0, f + k * g), buf.narrow(1, f + k * g, g));
    add_scaled_into(buf.narrow(1, 0, f), conv[4].forward(buf), kResidualScale, out);
}

void Rrdb::forward(const Tensor (&bufs)[3]) const {
    const int64_t f = rdb[0].conv[4].weight.size(0);
    const Tensor x = bufs[0].narrow(1, 0, f);
    rdb[0].forward(bufs[0], bufs[1].narrow(1, 0, f));
    rdb[1].forward(bufs[1], bufs[2].narrow(1, 0, f));
    rdb[2].forward(bufs[2], bufs[1].narrow(1, 0, f));
    add_scaled_into(x, bufs[1].narrow(1, 0, f), kResidualScale, x);
}

Esrgan Esrgan::load(const ModelFiles& files, const std::string& what, Residency residency) {
    Esrgan m;
    m.layout_ = detect_esrgan(files, what);
    const EsrganLayout& l = m.layout_;
    const PartNames names = part_names(l);
    const Weights w(files, l.prefix, residency);
    auto scope = [&](const std::string& name) { return w[name]; };
    const int64_t f = l.num_feat;
    m.conv_first = Conv2d::load(scope(names.first), l.in_channels, f, 3);
    for (int i = 0; i < l.num_blocks; ++i) {
        Rrdb block;
        for (int k = 0; k < 3; ++k)
            block.rdb[k] = ResidualDenseBlock::load(scope(block_scope(l, i, k)), l);
        m.body.push_back(block);
    }
    m.conv_body = Conv2d::load(scope(names.body_conv), f, f, 3);
    for (const std::string& up : names.up) {
        m.conv_up.push_back(Conv2d::load(scope(up), f, f, 3));
        m.conv_up.back().options.upsample2x = true;
        m.conv_up.back().options.leaky_relu = true;
        m.conv_up.back().options.negative_slope = kLeakySlope;
    }
    m.conv_hr = Conv2d::load(scope(names.hr), f, f, 3);
    m.conv_hr.options.leaky_relu = true;
    m.conv_hr.options.negative_slope = kLeakySlope;
    m.conv_last = Conv2d::load(scope(names.last), f, l.out_channels, 3);
    w.check("ESRGAN " + what);
    m.pages_ = w.pages();
    SD_LOG_INFO(
        "ESRGAN: %s names, %d RRDB blocks, width %lld (growth %lld), %dx%s",
        l.original_names ? "ESRGAN" : "Real-ESRGAN", l.num_blocks, (long long)f,
        (long long)l.num_grow, l.scale,
        l.unshuffle > 1 ? strfmt(" (%dx pixel-unshuffled input)", l.unshuffle).c_str() : "");
    return m;
}

// The input pixel-unshuffled by the layout's factor (torch.pixel_unshuffle: channel
// c * f * f + i * f + j holds pixel (f y + i, f x + j)), after reflect-padding the bottom
// and right edges to a multiple of the factor as Real-ESRGAN's inference does.
Tensor Esrgan::unshuffled_input(const Tensor& x) const {
    const int64_t f = layout_.unshuffle;
    if (f == 1) return x;
    Tensor t = x;
    for (int dim : {2, 3}) {
        const int64_t n = t.size(dim), pad = (f - n % f) % f;
        if (pad == 0) continue;
        std::vector<Tensor> parts = {t};
        for (int64_t p = 1; p <= pad; ++p)
            parts.push_back(t.narrow(dim, std::max<int64_t>(n - 1 - p, 0), 1));
        t = concat(parts, dim);
    }
    const int64_t c = t.size(1), h = t.size(2) / f, w = t.size(3) / f;
    return permute_copy(t.contiguous().view({c, h, f, w, f}), {0, 2, 4, 1, 3})
        .view({1, c * f * f, h, w});
}

Tensor Esrgan::forward(const Tensor& x) const {
    const EsrganLayout& l = layout_;
    const int64_t channels = l.in_channels / (l.unshuffle * l.unshuffle);
    SD_CHECK(x.dim() == 4 && x.size(0) == 1 && x.size(1) == channels,
             "ESRGAN input %s: expected [1, %lld, H, W]", x.describe().c_str(),
             (long long)channels);
    const int64_t out_h = x.size(2) * l.scale, out_w = x.size(3) * l.scale;
    Tensor feat = conv_first.forward(unshuffled_input(x));
    {
        const Shape shape{1, l.num_feat + 4 * l.num_grow, feat.size(2), feat.size(3)};
        // Where feat is: on the device of a placed upscaler.
        const Tensor bufs[3] = {gpu::empty_like_place(feat, shape),
                                gpu::empty_like_place(feat, shape),
                                gpu::empty_like_place(feat, shape)};
        copy_into(feat, bufs[0].narrow(1, 0, l.num_feat));
        for (const Rrdb& block : body) block.forward(bufs);
        feat = feat + conv_body.forward(bufs[0].narrow(1, 0, l.num_feat));
    }
    for (const Conv2d& up : conv_up) feat = up.forward(feat);
    Tensor out = conv_last.forward(conv_hr.forward(feat));
    if (out.size(2) == out_h && out.size(3) == out_w) return out;
    return out.narrow(2, 0, out_h).narrow(3, 0, out_w).contiguous();
}

}  // namespace sd
