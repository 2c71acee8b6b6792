#include "nn/weight_patch.h"

#include <atomic>

#include "ops/ops.h"

namespace sd {
namespace {

thread_local const WeightPatches* active_set = nullptr;
std::atomic<uint64_t> epochs{0};
thread_local uint64_t active_epoch = 0;

// x of any leading shape [..., in] -> [..., out] through a low-rank pair.
Tensor low_rank_linear(const LowRankTerm& t, const Tensor& x) {
    Tensor h = linear(x, t.down.view({t.down.size(0), t.down.numel() / t.down.size(0)}));
    if (t.mid.defined()) h = linear(h, t.mid.view({t.mid.size(0), t.mid.numel() / t.mid.size(0)}));
    Tensor y = linear(h, t.up.view({t.up.size(0), t.up.numel() / t.up.size(0)}));
    return t.scale == 1.0f ? y : y * t.scale;
}

Tensor low_rank_conv(const LowRankTerm& t, const Tensor& x, const Conv2dOptions& layer) {
    Conv2dOptions one;  // 1x1, stride 1, no padding
    one.upsample2x = layer.upsample2x;
    Tensor h;
    if (t.mid.defined()) {
        Conv2dOptions core = layer;
        core.upsample2x = false;
        h = conv2d(conv2d(x, t.down, {}, one), t.mid, {}, core);
    } else {
        h = conv2d(x, t.down, {}, layer);
    }
    Tensor y = conv2d(h, t.up, {}, Conv2dOptions{});
    return t.scale == 1.0f ? y : y * t.scale;
}

}  // namespace

const LayerPatch* active_patch(const std::string& name) {
    const WeightPatches* set = active_set;
    if (set == nullptr) return nullptr;
    auto it = set->find(name);
    return it == set->end() ? nullptr : &it->second;
}

uint64_t weight_patches_epoch() {
    return active_epoch;
}

ScopedWeightPatches::ScopedWeightPatches(const WeightPatches* patches) : previous_(active_set) {
    active_set = patches;
    active_epoch = ++epochs;
}

ScopedWeightPatches::~ScopedWeightPatches() {
    active_set = previous_;
    active_epoch = ++epochs;
}

Tensor patched_linear(const LayerPatch& patch, const Tensor& x, const Tensor& weight,
                      const Tensor& bias) {
    Tensor y = linear(x, patch.weight.defined() ? patch.weight : weight, bias);
    for (const LowRankTerm& t : patch.terms) y = y + low_rank_linear(t, x);
    for (const Tensor& d : patch.deltas) y = y + linear(x, d);
    return y;
}

Tensor patched_conv2d(const LayerPatch& patch, const Tensor& x, const Tensor& weight,
                      const Tensor& bias, const Conv2dOptions& options) {
    Tensor y = conv2d(x, patch.weight.defined() ? patch.weight : weight, bias, options);
    for (const LowRankTerm& t : patch.terms) y = y + low_rank_conv(t, x, options);
    for (const Tensor& d : patch.deltas) y = y + conv2d(x, d, {}, options);
    return y;
}

}  // namespace sd
