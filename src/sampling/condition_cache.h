// The interface of the condition-level step caches (easycache, ucache, and the reference's
// dbcache / taylorseer / cache-dit): around each diffusion-model call of a step, per side of
// guidance (`cond` tells the sides apart), the cache may answer in place of the network with
// input + (output - input) of that side's last computed call. The first side a run sees is the
// anchor: its input decides for the whole step. Inputs and outputs are f32, contiguous,
// the model's input (x * c_in) and raw output.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace sd {

class ConditionCache {
  public:
    virtual ~ConditionCache() = default;
    // Called once per sampler step (0-based index) before its first model call.
    virtual void begin_step(int step_index, float sigma) = 0;
    // True (and *output set) when the cached answer replaces the model call.
    virtual bool before_condition(const void* cond, const Tensor& input, Tensor* output) = 0;
    // After a computed call: remember it.
    virtual void after_condition(const void* cond, const Tensor& input, const Tensor& output) = 0;
    // The current step reuses the cache (its other calls follow the anchor's decision).
    virtual bool step_skipped() const = 0;
    virtual int steps_skipped() const = 0;
};

// The helpers the caches share, term for term as the reference's.
namespace cache_math {

// output - input, element by element (empty when the sizes differ).
std::vector<float> diff(const Tensor& input, const Tensor& output);
// input + diff as a new f32 tensor of input's shape.
Tensor apply_diff(const Tensor& input, const std::vector<float>& diff);
// mean |a - b| and mean |a|, summed in float in element order.
float mean_abs_diff(const float* a, const float* b, size_t n);
float mean_abs(const float* a, size_t n);
// sum |prev - curr| / (sum |prev| + 1e-6): DBCache's relative L1 change.
float relative_l1(const float* prev, const float* curr, size_t n);
std::vector<float> values(const Tensor& t);  // a contiguous f32 copy

}  // namespace cache_math
}  // namespace sd
