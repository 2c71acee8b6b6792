#include "nn/causal_conv3d.h"

#include <algorithm>

#include "base/error.h"
#include "ops/ops.h"

namespace sd {

namespace {
// Frames cached for the next chunk: a kernel of 3 frames needs the 2 before.
constexpr int64_t kCachedFrames = 2;
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
    c.taps.streamed = w.residency() == Residency::Streamed;
    c.taps.name = w.prefix() + "weight";
    return c;
}

Tensor CausalConv3d::forward(const Tensor& x, const Tensor& past) const {
    if (kt == 1 && front == 0 && stride_t == 1) return taps.forward(x);
    std::vector<Tensor> parts;
    int64_t zeros = front;
    if (past.defined() && front > 0) zeros -= past.size(0);
    SD_CHECK(zeros >= 0, "causal conv: %lld cached frames for a padding of %d",
             static_cast<long long>(past.size(0)), front);
    const int64_t C = x.size(1), H = x.size(2), W = x.size(3);
    if (zeros > 0) parts.push_back(Tensor::zeros({zeros, C, H, W}));
    if (past.defined() && front > 0) parts.push_back(past.contiguous());
    parts.push_back(x.contiguous());
    const Tensor frames = parts.size() == 1 ? parts[0] : concat(parts, 0);
    const int64_t total = frames.size(0);
    SD_CHECK(total >= kt, "causal conv: %lld frames for a kernel of %d",
             static_cast<long long>(total), kt);
    const int64_t out_frames = (total - kt) / stride_t + 1;
    // window[t, c, tau] = frames[t * stride + tau, c]: one packed copy of every output
    // frame's input frames, channel-major so the kernel's [in, kt] order reads it directly.
    const int64_t hw = H * W, chw = C * hw;
    const Tensor window =
        frames
            .as_strided({out_frames, C, kt, H, W}, {stride_t * chw, hw, chw, W, 1}, frames.offset())
            .contiguous()
            .view({out_frames, C * kt, H, W});
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
