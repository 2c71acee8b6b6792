// Brownian-motion noise for SDE samplers (the idea of k-diffusion's BrownianTreeNoiseSampler,
// our own construction): W(t) on [t0, t1] is fixed by a seed, and W at any time is found by
// bisecting the interval with Brownian bridges whose midpoint draws depend only on the seed and
// the node, so the noise of a step depends on its start and end, not on the step count.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace sd {

class BrownianTree {
  public:
    // Throws sd::Error unless t0 < t1 (both finite).
    BrownianTree(uint64_t seed, float t0, float t1, Shape shape);

    // (W(tb) - W(ta)) / sqrt(|tb - ta|): standard normal for each element; ta, tb in [t0, t1].
    Tensor noise(float ta, float tb) const;

    // W(t) itself (t clamped to [t0, t1]).
    std::vector<double> value(double t) const;

  private:
    std::vector<double> node_draw(uint64_t node) const;

    uint64_t seed_;
    double t0_, t1_;
    Shape shape_;
};

}  // namespace sd
