// Changes an adapter (a LoRA) makes to the Linear / Conv2d layers of a model, keyed by the
// layer's weight name, active on the calling thread while a ScopedWeightPatches lives. The
// model's own weights are never written: a patch either hands the layer a replacement
// weight (merged once into a new buffer) or adds terms to the layer's output in its forward.
// Without an active set a layer pays one thread-local load a call.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ops/conv.h"
#include "tensor/tensor.h"

namespace sd {

// y += scale * up(mid(down(x))). Linear: down [r, in], mid undefined, up [out, r].
// Conv2d: without mid, down [r, in, kh, kw] runs with the layer's stride and padding and up
// [out, r, 1, 1] is a 1x1 conv; with a Tucker core, down [r, in, 1, 1], mid [r', r, kh, kw]
// (the layer's stride and padding), up [out, r', 1, 1]. All f32.
struct LowRankTerm {
    Tensor down, mid, up;
    float scale = 1.0f;
};

struct LayerPatch {
    Tensor weight;                   // when defined: used instead of the layer's weight
    std::vector<LowRankTerm> terms;  // added to the output
    std::vector<Tensor> deltas;      // dense weight deltas (f32, the weight's shape): y += x * d

    bool empty() const { return !weight.defined() && terms.empty() && deltas.empty(); }
};

using WeightPatches = std::unordered_map<std::string, LayerPatch>;

// The patch for the weight `name` in the calling thread's active set, or nullptr.
const LayerPatch* active_patch(const std::string& name);

// A number that changes whenever the calling thread's active set does (a ScopedWeightPatches
// made or ended), for what caches a layer's output across calls: equal numbers, the same
// weights.
uint64_t weight_patches_epoch();

// Makes `patches` the calling thread's active set until destroyed (restoring the one before).
// `patches` must outlive it.
class ScopedWeightPatches {
  public:
    explicit ScopedWeightPatches(const WeightPatches* patches);
    ~ScopedWeightPatches();
    ScopedWeightPatches(const ScopedWeightPatches&) = delete;
    ScopedWeightPatches& operator=(const ScopedWeightPatches&) = delete;

  private:
    const WeightPatches* previous_;
};

// The layer's output under `patch`: `weight` is the layer's own (or streamed) weight.
Tensor patched_linear(const LayerPatch& patch, const Tensor& x, const Tensor& weight,
                      const Tensor& bias);
Tensor patched_conv2d(const LayerPatch& patch, const Tensor& x, const Tensor& weight,
                      const Tensor& bias, const Conv2dOptions& options);

}  // namespace sd
