// Causal 3-D convolution over video activations held frames-first, [T, C, H, W] (the frames
// as the batch): as Wan's CausalConv3d, all the time padding goes in front, so frame t of the
// output sees input frames <= t only, and a clip is convolved chunk by chunk with the last
// frames of the previous chunk (CausalConvCache) standing in for that padding.
#pragma once

#include <vector>

#include "nn/layers.h"

namespace sd {

struct CausalConv3d {
    // The [out, in, kt, k, k] kernel viewed as a 2-D one over in * kt channels: input channel
    // c of frame t + tau is channel c * kt + tau of the stacked window (see forward).
    Conv2d taps;
    int kt = 1;        // frames a kernel spans
    int front = 0;     // frames of padding in front (2 * the checkpoint's time padding)
    int stride_t = 1;  // time stride

    // Spatial padding `pad` on each side, time padding `pad_t` as the module's padding[0].
    static CausalConv3d load(const Weights& w, int64_t in, int64_t out, int kt, int k, int pad_t,
                             int pad, int stride_t = 1);
    // x [T, in, H, W], `past` [P, in, H, W] (P <= front) or undefined: the frames before x,
    // which replace that many frames of the zero padding. -> [T', out, H', W'].
    Tensor forward(const Tensor& x, const Tensor& past = {}) const;
};

// What one cached convolution kept from the previous chunk: its input's last frames.
struct CausalSlot {
    Tensor frames;      // undefined until a chunk stores some
    bool seen = false;  // a chunk has passed this convolution (Wan's "Rep" marks it framelessly)
};

// The cache of every convolution (Wan's feat_cache): one slot each, walked in call order by a
// chunk's forward. Per run: a clip's encode or decode makes one and drops it.
class CausalConvCache {
  public:
    // Starts a chunk: the next slot() is the first.
    void begin_chunk() { next_ = 0; }
    // The next convolution's slot.
    CausalSlot& slot();

    // Runs `conv` on x with the slot's frames, then keeps x's last two frames (with the
    // slot's last when x has one) for the next chunk.
    Tensor conv(const CausalConv3d& conv, const Tensor& x);

  private:
    std::vector<CausalSlot> slots_;
    size_t next_ = 0;
};

// x's last `n` frames (all when it has fewer).
Tensor last_frames(const Tensor& x, int64_t n);

}  // namespace sd
