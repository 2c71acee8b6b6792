#include "models/wan_vae.h"

#include "base/error.h"
#include "base/log.h"
#include "ops/ops.h"

namespace sd {
namespace {

// F.normalize's floor on the norm, inside the square root here: the same for any input that
// is not all zeros.
constexpr float kNormEps = 1e-12f;

// The encoder halves time after its second and third levels; the decoder doubles it after
// its first and second.
constexpr bool kTemporalDown[] = {false, true, true};
constexpr bool kTemporalUp[] = {true, true, false};

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
    if (with_encoder) {
        auto conv1 = w.shape_of("encoder.conv1.weight");
        SD_CHECK(conv1 && conv1->size() == 5, "the Wan VAE under '%s' has no encoder",
                 w.prefix().c_str());
        c.dim = (*conv1)[0];
    }
    return c;
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

Tensor WanRmsNorm::forward(const Tensor& x) const {
    // Channels last for the norm over each pixel's channels, then back.
    return permute_copy(rms_norm(permute_copy(x, {0, 2, 3, 1}), gamma, kNormEps), {0, 3, 1, 2});
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
    Tensor y = cache.conv(conv1, silu(norm1.forward(x)));
    y = cache.conv(conv2, silu(norm2.forward(y)));
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

WanResample WanResample::load(const Weights& w, int64_t dim, Mode mode) {
    WanResample r;
    r.mode = mode;
    const bool up = mode == Mode::Upsample2d || mode == Mode::Upsample3d;
    if (up)
        r.resample = Conv2d::load(w["resample.1"], dim, dim / 2, 3);
    else
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
    if (mode == Mode::Upsample2d || mode == Mode::Upsample3d)
        return resample.forward(upsample_nearest2x(x));
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

WanVaeEncoder WanVaeEncoder::load(const Weights& w, const WanVaeConfig& c) {
    WanVaeEncoder e;
    std::vector<int64_t> dims = {c.dim};
    for (int64_t m : c.mult) dims.push_back(c.dim * m);
    e.conv1 = conv333(w["conv1"], 3, dims[0]);
    int index = 0;
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
        Level level;
        int64_t in = dims[i];
        const int64_t out = dims[i + 1];
        for (int j = 0; j < c.res_blocks; ++j, in = out)
            level.blocks.push_back(WanResidualBlock::load(w["downsamples"][index++], in, out));
        if (i + 1 < c.mult.size()) {
            const auto mode = kTemporalDown[i] ? WanResample::Mode::Downsample3d
                                               : WanResample::Mode::Downsample2d;
            level.downsample = WanResample::load(w["downsamples"][index++], out, mode);
        }
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
        for (const WanResidualBlock& b : level.blocks) x = b.forward(x, cache);
        if (level.downsample) x = level.downsample->forward(x, cache);
    }
    x = middle2.forward(middle1.forward(middle0.forward(x, cache)), cache);
    return cache.conv(head, silu(head_norm.forward(x)));
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
        Level level;
        // After the first level each upsampler has halved the width.
        int64_t in = i == 0 ? dims[i] : dims[i] / 2;
        const int64_t out = dims[i + 1];
        for (int j = 0; j <= c.res_blocks; ++j, in = out)
            level.blocks.push_back(WanResidualBlock::load(w["upsamples"][index++], in, out));
        if (i + 1 < c.mult.size()) {
            const auto mode =
                kTemporalUp[i] ? WanResample::Mode::Upsample3d : WanResample::Mode::Upsample2d;
            level.upsample = WanResample::load(w["upsamples"][index++], out, mode);
        }
        d.levels.push_back(std::move(level));
    }
    d.head_norm = WanRmsNorm::load(w["head"][0], dims.back());
    d.head = conv333(w["head"][2], dims.back(), 3);
    return d;
}

Tensor WanVaeDecoder::forward(const Tensor& in, CausalConvCache& cache) const {
    Tensor x = cache.conv(conv1, in);
    x = middle2.forward(middle1.forward(middle0.forward(x, cache)), cache);
    for (const Level& level : levels) {
        for (const WanResidualBlock& b : level.blocks) x = b.forward(x, cache);
        if (level.upsample) x = level.upsample->forward(x, cache);
    }
    return cache.conv(head, silu(head_norm.forward(x)));
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
    SD_LOG_INFO("Wan VAE: %lld latent channels, widths %lld / %lld%s", (long long)c.z,
                (long long)c.dim, (long long)c.dec_dim, with_encoder ? ", with encoder" : "");
    return vae;
}

Tensor WanVae::encode(const Tensor& video) const {
    SD_CHECK(encoder_, "the Wan VAE was loaded without its encoder");
    const int64_t T = video.size(0);
    SD_CHECK(T >= 1 && (T - 1) % 4 == 0, "the Wan VAE encodes 1 + 4k frames, not %lld",
             static_cast<long long>(T));
    CausalConvCache cache;
    std::vector<Tensor> chunks;
    for (int64_t start = 0; start < T; start += start == 0 ? 1 : 4) {
        cache.begin_chunk();
        chunks.push_back(encoder_->forward(video.narrow(0, start, start == 0 ? 1 : 4), cache));
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
        frames.push_back(decoder_.forward(x.narrow(0, t, 1), cache));
    }
    return frames.size() == 1 ? frames[0] : concat(frames, 0);
}

}  // namespace sd
