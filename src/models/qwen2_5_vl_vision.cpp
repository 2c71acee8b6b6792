#include "models/qwen2_5_vl_vision.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "nn/clip_blocks.h"
#include "nn/dit_blocks.h"
#include "nn/rope.h"
#include "ops/ops.h"

namespace sd {
namespace {

constexpr const char* kModel = "Qwen2.5-VL vision tower";

int64_t dim_of(const Weights& w, const std::string& name, int d) {
    return w.dim_of(name, d, kModel);
}

// Width, channels, temporal and spatial patch from patch_embed.proj [width, C, T, p, p].
void read_patch_embed(const Weights& w, VisionConfig& c) {
    const std::optional<Shape> s = w.shape_of("patch_embed.proj.weight");
    SD_CHECK(s.has_value(), "no %s under '%s' (no patch_embed.proj.weight%s)", kModel,
             w.prefix().c_str(),
             w.has("patch_embed.proj.0.weight") ? "; llama.cpp's split patch_embed.proj.0 / .1 "
                                                  "layout is not supported"
                                                : "");
    SD_CHECK(s->size() == 5 && (*s)[3] == (*s)[4] && (*s)[3] > 0 && (*s)[2] > 0,
             "%s: '%spatch_embed.proj.weight' %s is not a Conv3d weight [width, C, T, p, p]",
             kModel, w.prefix().c_str(), s->to_string().c_str());
    c.width = (*s)[0];
    c.in_channels = (*s)[1];
    c.temporal_patch = (*s)[2];
    c.patch = (*s)[3];
}

// The merge size m from merger.mlp.0, which takes m * m patches of `width` values.
int64_t read_merge(const Weights& w, int64_t width) {
    const int64_t merged = dim_of(w, "merger.mlp.0.weight", 1);
    const auto m =
        static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(merged / width))));
    SD_CHECK(m > 0 && m * m * width == merged,
             "%s under '%s': merger.mlp.0 takes %lld values, not a square number of patches of "
             "width %lld",
             kModel, w.prefix().c_str(), (long long)merged, (long long)width);
    return m;
}

VisionConfig read_config(const Weights& w, const VisionOptions& o) {
    VisionConfig c;
    read_patch_embed(w, c);
    const char* where = w.prefix().c_str();
    c.depth = w.count_numbered("blocks", "attn.qkv.weight");
    SD_CHECK(c.depth > 0, "%s: no blocks.N.attn.qkv.weight under '%s'%s", kModel, where,
             w.has("blocks.0.attn.q_proj.weight")
                 ? " (llama.cpp's separate q / k / v projections are not supported)"
                 : "");
    c.ffn = dim_of(w, "blocks.0.mlp.gate_proj.weight", 0);
    c.merge = read_merge(w, c.width);
    c.out_width = dim_of(w, "merger.mlp.2.weight", 0);
    SD_CHECK(o.heads > 0 && c.width % o.heads == 0 && (c.width / o.heads) % 4 == 0,
             "%s: %lld heads do not split the width %lld into heads of a multiple of 4 channels "
             "(two rotary axes of pairs)",
             kModel, (long long)o.heads, (long long)c.width);
    c.heads = o.heads;
    c.head_dim = c.width / c.heads;
    const int64_t unit = c.patch * c.merge;
    SD_CHECK(o.window_size >= unit && o.window_size % unit == 0,
             "%s: window of %lld px is not a positive multiple of a merge unit (%lld px)", kModel,
             (long long)o.window_size, (long long)unit);
    c.window_size = o.window_size;
    for (int i : o.fullatt_blocks)
        if (i >= 0 && i < c.depth) c.fullatt_blocks.push_back(i);
    c.eps = o.eps;
    c.rope_theta = o.rope_theta;
    return c;
}

VisionBlock load_block(const Weights& b, const VisionConfig& c) {
    VisionBlock l;
    l.norm1 = b["norm1"].get("weight", {c.width});
    l.norm2 = b["norm2"].get("weight", {c.width});
    l.qkv = Linear::load(b["attn"]["qkv"], c.width, 3 * c.width);
    l.proj = Linear::load(b["attn"]["proj"], c.width, c.width);
    l.gate = Linear::load(b["mlp"]["gate_proj"], c.width, c.ffn);
    l.up = Linear::load(b["mlp"]["up_proj"], c.width, c.ffn);
    l.down = Linear::load(b["mlp"]["down_proj"], c.ffn, c.width);
    return l;
}

// Part `i` (0 q, 1 k) of the fused projection [1, L, 3 H D] as [1, L, H, D] with each head's
// values reordered (x[0], x[D/2], x[1], x[D/2 + 1], ...): the rotation's half-split pairs
// (x[j], x[j + D/2]) become the adjacent pairs the attention kernel rotates. q and k reordered
// alike keep every score.
Tensor rotary_pairs(const Tensor& qkv, int i, int64_t heads, int64_t head_dim) {
    const int64_t L = qkv.size(1), row = qkv.stride(1), half = head_dim / 2;
    const Tensor pairs = qkv.as_strided({1, L, heads, half, 2}, {L * row, row, head_dim, 1, half},
                                        qkv.offset() + i * heads * head_dim);
    return pairs.contiguous().view({1, L, heads, head_dim});
}

// Each patch's (row, column) in token order: units as `order` lists them, m x m patches each.
std::vector<float> patch_positions(const std::vector<int64_t>& order, int64_t units_w, int64_t m) {
    std::vector<float> pos;
    pos.reserve(order.size() * m * m * 2);
    for (int64_t u : order)
        for (int64_t iy = 0; iy < m; ++iy)
            for (int64_t ix = 0; ix < m; ++ix) {
                pos.push_back(static_cast<float>(u / units_w * m + iy));
                pos.push_back(static_cast<float>(u % units_w * m + ix));
            }
    return pos;
}

}  // namespace

VisionWindows vision_windows(int64_t units_h, int64_t units_w, int64_t window_units) {
    VisionWindows w;
    for (int64_t r = 0; r < units_h; r += window_units)
        for (int64_t c = 0; c < units_w; c += window_units) {
            const int64_t rows = std::min(window_units, units_h - r);
            const int64_t cols = std::min(window_units, units_w - c);
            for (int64_t y = 0; y < rows; ++y)
                for (int64_t x = 0; x < cols; ++x) w.order.push_back((r + y) * units_w + c + x);
            w.ends.push_back(static_cast<int64_t>(w.order.size()));
        }
    return w;
}

Qwen25VisionModel Qwen25VisionModel::load(const Weights& w, const VisionOptions& options) {
    Qwen25VisionModel m;
    m.config_ = read_config(w, options);
    const VisionConfig& c = m.config_;
    const int64_t patch_values = c.in_channels * c.temporal_patch * c.patch * c.patch;
    const Weights pe = w["patch_embed"]["proj"];
    m.patch_embed_.weight =
        pe.get("weight", {c.width, c.in_channels, c.temporal_patch, c.patch, c.patch})
            .view({c.width, patch_values});
    m.patch_embed_.streamed = w.residency() == Residency::Streamed;
    m.patch_embed_.name = pe.prefix() + "weight";
    for (int64_t i = 0; i < c.depth; ++i)
        m.blocks_.push_back(load_block(w["blocks"][static_cast<int>(i)], c));
    const int64_t merged = c.width * c.merge * c.merge;
    m.ln_q_ = w["merger"]["ln_q"].get("weight", {c.width});
    m.mlp0_ = Linear::load(w["merger"]["mlp"]["0"], merged, merged);
    m.mlp2_ = Linear::load(w["merger"]["mlp"]["2"], merged, c.out_width);
    w.check(kModel);
    m.pages_ = w.pages();
    std::string full;
    for (int i : c.fullatt_blocks) full += (full.empty() ? "" : ", ") + std::to_string(i);
    SD_LOG_INFO(
        "%s: %lld blocks, width %lld, %lld heads x %lld, feed-forward %lld, patch %lld x %lld "
        "(%lld frames), merge %lld x %lld, output width %lld, window %lld px, full attention in "
        "blocks {%s}",
        kModel, (long long)c.depth, (long long)c.width, (long long)c.heads, (long long)c.head_dim,
        (long long)c.ffn, (long long)c.patch, (long long)c.patch, (long long)c.temporal_patch,
        (long long)c.merge, (long long)c.merge, (long long)c.out_width, (long long)c.window_size,
        full.c_str());
    return m;
}

Tensor Qwen25VisionModel::patch_tokens(const Tensor& pixels,
                                       const std::vector<int64_t>& unit_order) const {
    const VisionConfig& c = config_;
    const int64_t C = c.in_channels, T = c.temporal_patch, p = c.patch, m = c.merge;
    const int64_t H = pixels.size(2), W = pixels.size(3), units_w = W / (p * m);
    const int64_t n = static_cast<int64_t>(unit_order.size()) * m * m, values = C * T * p * p;
    const Tensor src_t = pixels.contiguous();
    const float* src = src_t.data<float>();
    Tensor out = Tensor::empty({1, n, values});
    float* dst = out.data<float>();
    // Token (unit j, patch iy, ix) holds (c, t, y, x) of its patch, every frame the same image.
    parallel_for(static_cast<int64_t>(unit_order.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) {
            const int64_t u = unit_order[j];
            for (int64_t k = 0; k < m * m; ++k) {
                const int64_t y0 = (u / units_w * m + k / m) * p,
                              x0 = (u % units_w * m + k % m) * p;
                float* t = dst + (j * m * m + k) * values;
                for (int64_t ch = 0; ch < C; ++ch)
                    for (int64_t f = 0; f < T; ++f)
                        for (int64_t y = 0; y < p; ++y, t += p)
                            std::copy_n(src + (ch * H + y0 + y) * W + x0, p, t);
            }
        }
    });
    return out;
}

Tensor Qwen25VisionModel::attention(const VisionBlock& b, const Tensor& x, const Tensor& rope,
                                    const std::vector<int64_t>& windows) const {
    const int64_t h = config_.heads, d = config_.head_dim;
    const Tensor qkv = b.qkv.forward(x);
    const Tensor q = rotary_pairs(qkv, 0, h, d), k = rotary_pairs(qkv, 1, h, d);
    const Tensor v = head_view(qkv, 2, h, d);
    if (windows.empty()) return b.proj.forward(dit_attention(q, k, v, rope));
    // Window attention: each window's tokens are one contiguous range that sees only itself.
    std::vector<Tensor> parts;
    int64_t start = 0;
    for (int64_t end : windows) {
        const int64_t len = end - start;
        parts.push_back(dit_attention(q.narrow(1, start, len), k.narrow(1, start, len),
                                      v.narrow(1, start, len), rope.narrow(0, start, len)));
        start = end;
    }
    return b.proj.forward(parts.size() == 1 ? parts[0] : concat(parts, 1));
}

Tensor Qwen25VisionModel::merge(const Tensor& x) const {
    const int64_t group = config_.merge * config_.merge;
    const Tensor normed = rms_norm(x, ln_q_, config_.eps);
    const Tensor units = normed.view({x.size(1) / group, group * config_.width});
    return mlp2_.forward(gelu(mlp0_.forward(units), GeluApprox::Tanh));
}

Tensor Qwen25VisionModel::forward(const Tensor& pixels) const {
    const VisionConfig& c = config_;
    const int64_t f = factor();
    SD_CHECK(pixels.defined() && pixels.dtype() == DType::F32 && pixels.dim() == 4 &&
                 pixels.size(0) == 1 && pixels.size(1) == c.in_channels,
             "%s: the image must be f32 [1, %lld, H, W], not %s", kModel, (long long)c.in_channels,
             pixels.defined() ? pixels.describe().c_str() : "undefined");
    const int64_t H = pixels.size(2), W = pixels.size(3);
    SD_CHECK(H >= f && W >= f && H % f == 0 && W % f == 0,
             "%s: an image of %lld x %lld px (height x width); its sides must be positive "
             "multiples of %lld px (patch %lld x merge %lld)",
             kModel, (long long)H, (long long)W, (long long)f, (long long)c.patch,
             (long long)c.merge);
    const int64_t units_h = H / f, units_w = W / f, group = c.merge * c.merge;
    const VisionWindows win = vision_windows(units_h, units_w, c.window_size / f);
    Tensor x = patch_embed_.forward(patch_tokens(pixels, win.order));
    const std::vector<int> axes = {static_cast<int>(c.head_dim / 2),
                                   static_cast<int>(c.head_dim / 2)};
    const Tensor rope =
        rope_table(patch_positions(win.order, units_w, c.merge), axes, c.rope_theta);
    std::vector<int64_t> windows;  // each window's end, in tokens
    for (int64_t e : win.ends) windows.push_back(e * group);
    for (int64_t i = 0; i < c.depth; ++i) {
        const VisionBlock& b = blocks_[i];
        const bool full = std::find(c.fullatt_blocks.begin(), c.fullatt_blocks.end(), i) !=
                          c.fullatt_blocks.end();
        x = x + attention(b, rms_norm(x, b.norm1, c.eps), rope,
                          full ? std::vector<int64_t>{} : windows);
        const Tensor h = rms_norm(x, b.norm2, c.eps);
        x = x + b.down.forward(silu(b.gate.forward(h)) * b.up.forward(h));
    }
    const Tensor merged = merge(x);  // [units, out_width], window order
    // Back to row-major: unit u is row `at[u]` of the window order.
    const int64_t units = units_h * units_w;
    Tensor at = Tensor::empty({1, units}, DType::I32);
    for (int64_t j = 0; j < units; ++j) at.data<int32_t>()[win.order[j]] = static_cast<int32_t>(j);
    return embedding(merged, at);
}

std::pair<int64_t, int64_t> qwen25_vision_size(int64_t height, int64_t width, int64_t factor,
                                               int64_t min_pixels, int64_t max_pixels) {
    SD_CHECK(height > 0 && width > 0 && factor > 0,
             "%s: cannot size an image of %lld x %lld px (height x width) for multiples of %lld",
             kModel, (long long)height, (long long)width, (long long)factor);
    const double h = static_cast<double>(height), w = static_cast<double>(width);
    const double fa = static_cast<double>(factor);
    auto multiple = [&](double v) { return static_cast<int64_t>(v) * factor; };
    if (min_pixels > 0 && min_pixels == max_pixels) {  // one area: scaled to it, rounded
        const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
        return {std::max(factor, multiple(std::round(h * beta / fa))),
                std::max(factor, multiple(std::round(w * beta / fa)))};
    }
    int64_t hb = multiple(std::round(h / fa)), wb = multiple(std::round(w / fa));
    const double area = static_cast<double>(hb) * static_cast<double>(wb);
    if (max_pixels > 0 && area > static_cast<double>(max_pixels)) {
        const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
        hb = std::max(factor, multiple(std::floor(h / beta / fa)));
        wb = std::max(factor, multiple(std::floor(w / beta / fa)));
    } else if (min_pixels > 0 && area < static_cast<double>(min_pixels)) {
        const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
        hb = multiple(std::ceil(h * beta / fa));
        wb = multiple(std::ceil(w * beta / fa));
    }
    return {hb, wb};
}

Tensor qwen25_vision_preprocess(const Tensor& image, int64_t out_h, int64_t out_w) {
    return clip_image_preprocess(image, out_h, out_w, kModel);  // CLIP's resize, crop, statistics
}

}  // namespace sd
