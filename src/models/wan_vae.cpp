#include "models/wan_vae.h"

#include "base/error.h"
#include "base/log.h"
#include "ops/ops.h"

namespace sd {
namespace {

// F.normalize's floor on the norm, inside the square root here: the same for any input that
// is not all zeros.
constexpr float kNormEps = 1e-12f;

CausalConv3d conv333(const Weights& w, int64_t in, int64_t out) {
    return CausalConv3d::load(w, in, out, 3, 3, 1, 1);
}

CausalConv3d conv111(const Weights& w, int64_t in, int64_t out) {
    return CausalConv3d::load(w, in, out, 1, 1, 0, 0);
}

WanVaeConfig read_config(const Weights& w, bool with_encoder) {
    WanVaeConfig c;
    auto conv2 = w.shape_of("conv2.weight");
    auto head = w.shape_of("decoder.head.2.weight");
    SD_CHECK(conv2 && head && conv2->size() == 5 && head->size() == 5,
             "no Wan VAE under '%s' (it needs conv2.weight and decoder.head.2.weight, 5-D)",
             w.prefix().c_str());
    c.z = (*conv2)[0];
    c.dec_dim = (*head)[1];
    c.dim = c.dec_dim;
    // Wan 2.2's decoder ends in 2x2 pixels of RGB, 12 channels, where 2.1's ends in 3 (4:
    // Qwen-Image-Layered's RGBA VAE).
    const int64_t out = (*head)[0];
    SD_CHECK(out == 3 || out == 4 || out == 12,
             "'%sdecoder.head.2.weight' makes %lld channels, not 3, 4 or 12", w.prefix().c_str(),
             static_cast<long long>(out));
    c.wan22 = out == 12;
    c.patch = c.wan22 ? 2 : 1;
    c.colors = c.wan22 ? 3 : out;
    if (with_encoder) {
        auto conv1 = w.shape_of("encoder.conv1.weight");
        SD_CHECK(conv1 && conv1->size() == 5, "the Wan VAE under '%s' has no encoder",
                 w.prefix().c_str());
        c.dim = (*conv1)[0];
    }
    return c;
}

// Which resamples also halve or double time is read from the weights: those that do have a
// time_conv (Wan's encoders: the second and third levels; decoders: the first and second).
bool temporal(const Weights& resample) {
    return resample.has("time_conv.weight");
}

// Wan 2.2's patchify, "c f (h q) (w r) -> (c r q) f h w" frames-first: pixel (q, r) of each
// p x p patch becomes channel c p^2 + r p + q (the column offset outside the row's).
Tensor patchify(const Tensor& x, int64_t p) {
    const int64_t T = x.size(0), C = x.size(1), H = x.size(2) / p, W = x.size(3) / p;
    return permute_copy(x.reshape({T * C, H, p, W, p}), {0, 4, 2, 1, 3}).view({T, C * p * p, H, W});
}

Tensor unpatchify(const Tensor& x, int64_t p) {
    const int64_t T = x.size(0), C = x.size(1) / (p * p), H = x.size(2), W = x.size(3);
    return permute_copy(x.reshape({T * C, p, p, H, W}), {0, 3, 2, 4, 1}).view({T, C, H * p, W * p});
}

}  // namespace

WanRmsNorm WanRmsNorm::load(const Weights& w, int64_t channels) {
    // Stored [C, 1, 1, 1] (the encoder's and decoder's) or [C, 1, 1] (the attention's).
    auto shape = w.shape_of("gamma");
    SD_CHECK(shape && shape->size() > 0, "'%sgamma' is missing", w.prefix().c_str());
    Shape want = *shape;
    want[0] = channels;
    return {w.get("gamma", want).view({channels})};
}

Tensor WanRmsNorm::forward(const Tensor& x, bool then_silu) const {
    return rms_norm_channels(x, gamma, kNormEps, then_silu);
}

WanResidualBlock WanResidualBlock::load(const Weights& w, int64_t in, int64_t out) {
    WanResidualBlock b;
    b.norm1 = WanRmsNorm::load(w["residual.0"], in);
    b.conv1 = conv333(w["residual.2"], in, out);
    b.norm2 = WanRmsNorm::load(w["residual.3"], out);
    b.conv2 = conv333(w["residual.6"], out, out);
    if (in != out) b.shortcut = conv111(w["shortcut"], in, out);
    return b;
}

Tensor WanResidualBlock::forward(const Tensor& x, CausalConvCache& cache) const {
    const Tensor h = shortcut ? shortcut->forward(x) : x;
    Tensor y = cache.conv(conv1, norm1.forward(x, /*silu=*/true));
    y = cache.conv(conv2, norm2.forward(y, /*silu=*/true));
    return add(y, h);
}

WanAttentionBlock WanAttentionBlock::load(const Weights& w, int64_t channels) {
    WanAttentionBlock a;
    a.norm = WanRmsNorm::load(w["norm"], channels);
    a.to_qkv = Conv2d::load(w["to_qkv"], channels, 3 * channels, 1);
    a.proj = Conv2d::load(w["proj"], channels, channels, 1);
    return a;
}

Tensor WanAttentionBlock::forward(const Tensor& x) const {
    const int64_t T = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const Tensor qkv = to_qkv.forward(norm.forward(x)).view({T, 3 * C, H * W});
    // Each of q, k, v as [T, 1 head, H*W, C]: views of the fused projection.
    auto part = [&](int64_t i) { return qkv.narrow(1, i * C, C).permute({0, 2, 1}).unsqueeze(1); };
    const Tensor o = scaled_dot_product_attention(part(0), part(1), part(2));  // [T, 1, HW, C]
    const Tensor y = permute_copy(o.view({T, H * W, C}), {0, 2, 1}).view({T, C, H, W});
    return add(proj.forward(y), x);
}

WanResample WanResample::load(const Weights& w, int64_t dim, Mode mode, bool keep_width) {
    WanResample r;
    r.mode = mode;
    const bool up = mode == Mode::Upsample2d || mode == Mode::Upsample3d;
    if (up) {
        // Nearest 2x upsampling read by the convolution itself (no 4x copy), Winograd's 3x3.
        r.resample = Conv2d::load(w["resample.1"], dim, keep_width ? dim : dim / 2, 3);
        r.resample.options.upsample2x = true;
        r.resample.options.winograd = true;
    } else
        r.resample = Conv2d::load(w["resample.1"], dim, dim, 3, 2, 0);
    if (mode == Mode::Upsample3d)
        r.time_conv = CausalConv3d::load(w["time_conv"], dim, 2 * dim, 3, 1, 1, 0);
    if (mode == Mode::Downsample3d)
        r.time_conv = CausalConv3d::load(w["time_conv"], dim, dim, 3, 1, 0, 0, 2);
    return r;
}

Tensor WanResample::forward(const Tensor& in, CausalConvCache& cache) const {
    Tensor x = in;
    if (mode == Mode::Upsample3d) {
        // Frame t becomes frames 2t and 2t + 1 (time_conv's two halves of 2C channels); the
        // first chunk stays one frame, and the second pads its time with zeros, not a cache.
        CausalSlot& s = cache.slot();
        if (s.seen) {
            Tensor keep = last_frames(x, 2).clone();
            if (keep.size(0) < 2)
                keep = concat({s.frames.defined() ? last_frames(s.frames, 1).contiguous()
                                                  : Tensor::zeros(keep.shape()),
                               keep},
                              0);
            x = time_conv->forward(x, s.frames);
            const int64_t T = x.size(0), C = x.size(1) / 2;
            x = x.view({2 * T, C, x.size(2), x.size(3)});
            s.frames = std::move(keep);
        }
        s.seen = true;
    }
    if (mode == Mode::Upsample2d || mode == Mode::Upsample3d) return resample.forward(x);
    x = resample.forward(pad2d(x, 0, 1, 0, 1));
    if (mode == Mode::Downsample3d) {
        // The first chunk's frames are kept whole; later chunks prepend the last kept frame
        // and halve their frames with a stride-2 time_conv.
        CausalSlot& s = cache.slot();
        if (s.seen) {
            Tensor keep = last_frames(x, 1).clone();
            x = time_conv->forward(concat({last_frames(s.frames, 1).contiguous(), x}, 0));
            s.frames = std::move(keep);
        } else {
            s.frames = x.clone();
            s.seen = true;
        }
    }
    return x;
}

Tensor WanAvgDown3d::forward(const Tensor& in) const {
    const int64_t C = in.size(1), H = in.size(2) / fs, W = in.size(3) / fs;
    if (ft == 1 && fs == 1 && C == out) return in;  // the last level's: the identity
    Tensor x = in;
    if (const int64_t pad = (ft - in.size(0) % ft) % ft; pad > 0)  // the first chunk's frame
        x = concat({Tensor::zeros({pad, C, in.size(2), in.size(3)}), in}, 0);
    const int64_t T = x.size(0) / ft, group = C * ft * fs * fs / out;
    // Pixel (q, r) of each fs x fs block to channel (c, q, r) ...
    x = permute_copy(x.reshape({x.size(0) * C, H, fs, W, fs}), {0, 2, 4, 1, 3});
    // ... and frame a of each ft to channel ((c ft + a) fs + q) fs + r: Wan's order.
    x = permute_copy(x.view({T, ft, C, fs * fs * H * W}), {0, 2, 1, 3});
    return mean(x.view({T, out, group, H * W}), 2).view({T, out, H, W});
}

Tensor WanDupUp3d::forward(const Tensor& in, bool first_chunk) const {
    const int64_t T = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
    const int64_t repeats = out * ft * fs * fs / C;
    // Each channel repeated in place (repeat_interleave); channel ((o ft + a) fs + q) fs + r
    // of the result is frame a, pixel (q, r) of channel o.
    Tensor x = in.contiguous().view({T, C, 1, H * W}).expand({T, C, repeats, H * W});
    x = permute_copy(x.reshape({T, out, ft, fs * fs * H * W}), {0, 2, 1, 3});
    x = permute_copy(x.view({T * ft * out, fs, fs, H, W}), {0, 3, 1, 4, 2})
            .view({T * ft, out, H * fs, W * fs});
    return first_chunk ? x.narrow(0, ft - 1, T * ft - (ft - 1)) : x;
}

WanVaeEncoder WanVaeEncoder::load(const Weights& w, const WanVaeConfig& c) {
    WanVaeEncoder e;
    std::vector<int64_t> dims = {c.dim};
    for (int64_t m : c.mult) dims.push_back(c.dim * m);
    e.conv1 = conv333(w["conv1"], c.video_channels(), dims[0]);
    int index = 0;
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
        // 2.1 numbers the blocks and resamples of all levels in one list, 2.2 in one a level.
        const Weights list = c.wan22 ? w["downsamples"][int(i)]["downsamples"] : w["downsamples"];
        if (c.wan22) index = 0;
        Level level;
        int64_t in = dims[i];
        const int64_t out = dims[i + 1];
        for (int j = 0; j < c.res_blocks; ++j, in = out)
            level.blocks.push_back(WanResidualBlock::load(list[index++], in, out));
        const bool down = i + 1 < c.mult.size();
        const bool in_time = down && temporal(list[index]);
        if (down) {
            const auto mode =
                in_time ? WanResample::Mode::Downsample3d : WanResample::Mode::Downsample2d;
            level.downsample = WanResample::load(list[index++], out, mode);
        }
        if (c.wan22) level.shortcut = WanAvgDown3d{out, in_time ? 2 : 1, down ? 2 : 1};
        e.levels.push_back(std::move(level));
    }
    const int64_t mid = dims.back();
    e.middle0 = WanResidualBlock::load(w["middle"][0], mid, mid);
    e.middle1 = WanAttentionBlock::load(w["middle"][1], mid);
    e.middle2 = WanResidualBlock::load(w["middle"][2], mid, mid);
    e.head_norm = WanRmsNorm::load(w["head"][0], mid);
    e.head = conv333(w["head"][2], mid, 2 * c.z);
    return e;
}

Tensor WanVaeEncoder::forward(const Tensor& in, CausalConvCache& cache) const {
    Tensor x = cache.conv(conv1, in);
    for (const Level& level : levels) {
        const Tensor level_in = x;
        for (const WanResidualBlock& b : level.blocks) x = b.forward(x, cache);
        if (level.downsample) x = level.downsample->forward(x, cache);
        if (level.shortcut) x = add(x, level.shortcut->forward(level_in));
    }
    x = middle2.forward(middle1.forward(middle0.forward(x, cache)), cache);
    return cache.conv(head, head_norm.forward(x, /*silu=*/true));
}

WanVaeDecoder WanVaeDecoder::load(const Weights& w, const WanVaeConfig& c) {
    WanVaeDecoder d;
    std::vector<int64_t> dims = {c.dec_dim * c.mult.back()};
    for (size_t i = c.mult.size(); i-- > 0;) dims.push_back(c.dec_dim * c.mult[i]);
    d.conv1 = conv333(w["conv1"], c.z, dims[0]);
    d.middle0 = WanResidualBlock::load(w["middle"][0], dims[0], dims[0]);
    d.middle1 = WanAttentionBlock::load(w["middle"][1], dims[0]);
    d.middle2 = WanResidualBlock::load(w["middle"][2], dims[0], dims[0]);
    int index = 0;
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
        const Weights list = c.wan22 ? w["upsamples"][int(i)]["upsamples"] : w["upsamples"];
        if (c.wan22) index = 0;
        Level level;
        // 2.1: after the first level each upsampler has halved the width; 2.2's keep it.
        int64_t in = i == 0 || c.wan22 ? dims[i] : dims[i] / 2;
        const int64_t out = dims[i + 1];
        for (int j = 0; j <= c.res_blocks; ++j, in = out)
            level.blocks.push_back(WanResidualBlock::load(list[index++], in, out));
        if (i + 1 < c.mult.size()) {
            const bool in_time = temporal(list[index]);
            const auto mode =
                in_time ? WanResample::Mode::Upsample3d : WanResample::Mode::Upsample2d;
            level.upsample = WanResample::load(list[index++], out, mode, c.wan22);
            if (c.wan22) level.shortcut = WanDupUp3d{out, in_time ? 2 : 1, 2};
        }
        d.levels.push_back(std::move(level));
    }
    d.head_norm = WanRmsNorm::load(w["head"][0], dims.back());
    d.head = conv333(w["head"][2], dims.back(), c.video_channels());
    return d;
}

Tensor WanVaeDecoder::forward(const Tensor& in, CausalConvCache& cache, bool first_chunk) const {
    Tensor x = cache.conv(conv1, in);
    x = middle2.forward(middle1.forward(middle0.forward(x, cache)), cache);
    for (const Level& level : levels) {
        const Tensor level_in = x;
        for (const WanResidualBlock& b : level.blocks) x = b.forward(x, cache);
        if (level.upsample) x = level.upsample->forward(x, cache);
        if (level.shortcut) x = add(x, level.shortcut->forward(level_in, first_chunk));
    }
    return cache.conv(head, head_norm.forward(x, /*silu=*/true));
}

WanVae WanVae::load(const Weights& w, bool with_encoder) {
    WanVae vae;
    vae.config_ = read_config(w, with_encoder);
    const WanVaeConfig& c = vae.config_;
    vae.conv2_ = conv111(w["conv2"], c.z, c.z);
    vae.decoder_ = WanVaeDecoder::load(w["decoder"], c);
    if (with_encoder) {
        vae.conv1_ = conv111(w["conv1"], 2 * c.z, 2 * c.z);
        vae.encoder_ = WanVaeEncoder::load(w["encoder"], c);
    }
    w.check(with_encoder ? "Wan VAE" : "Wan VAE decoder");
    vae.pages_ = w.pages();
    SD_LOG_INFO("Wan %s VAE%s: %lld latent channels, widths %lld / %lld%s", c.wan22 ? "2.2" : "2.1",
                c.colors == 4 ? " (RGBA)" : "", (long long)c.z, (long long)c.dim,
                (long long)c.dec_dim, with_encoder ? ", with encoder" : "");
    return vae;
}

Tensor WanVae::encode(const Tensor& video) const {
    SD_CHECK(encoder_, "the Wan VAE was loaded without its encoder");
    const int64_t T = video.size(0);
    SD_CHECK(T >= 1 && (T - 1) % 4 == 0, "the Wan VAE encodes 1 + 4k frames, not %lld",
             static_cast<long long>(T));
    SD_CHECK(video.size(1) == config_.colors,
             "the Wan VAE encodes frames of %lld channels, not %lld",
             static_cast<long long>(config_.colors), static_cast<long long>(video.size(1)));
    const int64_t p = config_.patch;
    // 2.2's level shortcuts fold 2x2 pixels at each of three levels, after the patchify.
    SD_CHECK(p == 1 || (video.size(2) % 16 == 0 && video.size(3) % 16 == 0),
             "the Wan 2.2 VAE encodes frames of multiples of 16 pixels, not %lldx%lld",
             static_cast<long long>(video.size(3)), static_cast<long long>(video.size(2)));
    const Tensor x = p > 1 ? patchify(video, p) : video;
    CausalConvCache cache;
    std::vector<Tensor> chunks;
    for (int64_t start = 0; start < T; start += start == 0 ? 1 : 4) {
        cache.begin_chunk();
        chunks.push_back(encoder_->forward(x.narrow(0, start, start == 0 ? 1 : 4), cache));
    }
    const Tensor out = conv1_->forward(chunks.size() == 1 ? chunks[0] : concat(chunks, 0));
    return out.narrow(1, 0, config_.z).contiguous();  // the mean; the log-variance is unused
}

Tensor WanVae::decode(const Tensor& latent) const {
    const Tensor x = conv2_.forward(latent);
    CausalConvCache cache;
    std::vector<Tensor> frames;
    for (int64_t t = 0; t < x.size(0); ++t) {
        cache.begin_chunk();
        frames.push_back(decoder_.forward(x.narrow(0, t, 1), cache, t == 0));
    }
    const Tensor out = frames.size() == 1 ? frames[0] : concat(frames, 0);
    return config_.patch > 1 ? unpatchify(out, config_.patch) : out;
}

}  // namespace sd
