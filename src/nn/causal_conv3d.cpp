#include "nn/causal_conv3d.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/ops.h"

namespace sd {

namespace {
// Frames cached for the next chunk: a kernel of 3 frames needs the 2 before.
constexpr int64_t kCachedFrames = 2;
constexpr int64_t kWinogradMinChannels = 32;
}  // namespace

CausalConv3d CausalConv3d::load(const Weights& w, int64_t in, int64_t out, int kt, int k, int pad_t,
                                int pad, int stride_t) {
    CausalConv3d c;
    c.kt = kt;
    c.front = 2 * pad_t;
    c.stride_t = stride_t;
    c.taps.weight = w.get("weight", {out, in, kt, k, k}).view({out, in * kt, k, k});
    c.taps.bias = w.get("bias", {out});
    c.taps.options.pad_h = c.taps.options.pad_w = pad;
    // The wide 3x3 taps run Winograd's F(4x4, 3x3), as the KL VAE's: several times faster at
    // 96 .. 384 channels; with 3 .. 16 channels on a side (the first and last) it is not.
    c.taps.options.winograd =
        k == 3 && in * kt >= kWinogradMinChannels && out >= kWinogradMinChannels;
    c.taps.streamed = w.residency() == Residency::Streamed;
    c.taps.name = w.prefix() + "weight";
    return c;
}

Tensor CausalConv3d::forward(const Tensor& x, const Tensor& past) const {
    if (kt == 1 && front == 0 && stride_t == 1) return taps.forward(x);
    const bool use_past = past.defined() && front > 0;
    const int64_t zeros = front - (use_past ? past.size(0) : 0);
    SD_CHECK(zeros >= 0, "causal conv: %lld cached frames for a padding of %d",
             static_cast<long long>(past.size(0)), front);
    // The input frames in order: `zeros` zero frames, the cached ones, then x's.
    const Tensor xs = x.contiguous(), ps = use_past ? past.contiguous() : Tensor();
    const int64_t C = x.size(1), H = x.size(2), W = x.size(3), hw = H * W, chw = C * hw;
    const int64_t cached = use_past ? ps.size(0) : 0, total = zeros + cached + x.size(0);
    SD_CHECK(total >= kt, "causal conv: %lld frames for a kernel of %d",
             static_cast<long long>(total), kt);
    auto frame = [&](int64_t f) -> const float* {
        if (f < zeros) return nullptr;
        f -= zeros;
        return f < cached ? ps.data<float>() + f * chw : xs.data<float>() + (f - cached) * chw;
    };
    // window[t, c, tau] = frame t * stride + tau's channel c: every output frame's input frames
    // in one packed copy, channel-major so the kernel's [in, kt] order reads it directly.
    const int64_t out_frames = (total - kt) / stride_t + 1, planes = out_frames * C * kt;
    Tensor window = Tensor::empty({out_frames, C * kt, H, W});
    float* dst = window.data<float>();
    parallel_for(planes, std::max<int64_t>(1, (1 << 16) / hw), [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const int64_t t = p / (C * kt), c = p / kt % C, tau = p % kt;
            const float* src = frame(t * stride_t + tau);
            float* d = dst + p * hw;
            if (src)
                std::memcpy(d, src + c * hw, static_cast<size_t>(hw) * sizeof(float));
            else
                std::memset(d, 0, static_cast<size_t>(hw) * sizeof(float));
        }
    });
    return taps.forward(window);
}

Tensor last_frames(const Tensor& x, int64_t n) {
    const int64_t t = x.size(0);
    return n >= t ? x : x.narrow(0, t - n, n);
}

CausalSlot& CausalConvCache::slot() {
    if (next_ >= slots_.size()) slots_.resize(next_ + 1);
    return slots_[next_++];
}

Tensor CausalConvCache::conv(const CausalConv3d& conv, const Tensor& x) {
    CausalSlot& s = slot();
    Tensor keep = last_frames(x, kCachedFrames).clone();  // x may be reused in place later
    if (keep.size(0) < kCachedFrames && s.frames.defined())
        keep = concat({last_frames(s.frames, 1).contiguous(), keep}, 0);
    Tensor y = conv.forward(x, s.frames);
    s.frames = std::move(keep);
    s.seen = true;
    return y;
}

}  // namespace sd
