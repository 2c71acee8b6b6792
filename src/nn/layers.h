// The layers every model family shares, as in torch.nn. Each holds its parameters and
// applies them with forward(); load() binds them to the checkpoint by name and shape.
// While importance-matrix collection is on (io/imatrix.h), Linear and Conv2d record their
// inputs under their weight's name; when it is off that costs one atomic load a call.
// An adapter's patches (nn/weight_patch.h) reach them the same way, by the weight's name.
#pragma once

#include <cstdint>
#include <string>

#include "nn/weights.h"
#include "ops/ops.h"

namespace sd {

struct Linear {
    Tensor weight;          // [out, in], any dtype
    Tensor bias;            // [out] or undefined
    bool streamed = false;  // read the weight from the file for each forward (Residency::Streamed)
    std::string name;       // the weight's checkpoint name: the importance matrix's key

    static Linear load(const Weights& w, int64_t in, int64_t out, bool bias = true);
    Tensor forward(const Tensor& x) const;
};

struct Conv2d {
    Tensor weight;  // [out, in, k, k]
    Tensor bias;    // [out] or undefined
    Conv2dOptions options;
    bool streamed = false;  // as Linear::streamed
    std::string name;       // as Linear::name

    // A square kernel; padding defaults to "same" (k / 2).
    static Conv2d load(const Weights& w, int64_t in, int64_t out, int kernel, int stride = 1,
                       int padding = -1, bool bias = true);
    Tensor forward(const Tensor& x) const;
    // forward(x) + residual with options' LeakyReLU after the sum (a residual block's skip
    // and activation, added in the convolution's store: see conv2d_add).
    Tensor forward_add(const Tensor& x, const Tensor& residual) const;
    // The result written into `out` (see conv2d_into), e.g. a channel range of a buffer.
    void forward_into(const Tensor& x, const Tensor& out) const;
};

struct GroupNorm {
    Tensor weight, bias;  // [channels]
    int64_t groups = 32;
    float eps = 1e-5f;

    static GroupNorm load(const Weights& w, int64_t groups, int64_t channels, float eps);
    // silu = true applies SiLU in the same pass (GroupNorm -> SiLU, everywhere in the UNet).
    Tensor forward(const Tensor& x, bool silu = false) const {
        return group_norm(x, groups, weight, bias, eps, silu);
    }
    // On a tensor handed over (std::move): normalised in its own memory when unshared.
    Tensor forward(Tensor&& x, bool silu = false) const {
        return group_norm(std::move(x), groups, weight, bias, eps, silu);
    }
};

struct LayerNorm {
    Tensor weight, bias;  // [dim]
    float eps = 1e-5f;

    static LayerNorm load(const Weights& w, int64_t dim, float eps);
    Tensor forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }
};

// Multi-head attention over sequences: q [B, Lq, H*D], k and v [B, Lk, H*D] -> [B, Lq, H*D].
// The heads are split as views; the attention kernel reads the strided layout in place.
Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                            const Tensor& mask = {}, bool causal = false);

}  // namespace sd
