// Stand-ins for a family's parts in tests of the generation loop: a conditioner whose context
// is all ones (all zeros for the negative prompt) and a codec of blank latents and images.
#pragma once

#include "pipeline/components.h"

namespace sd::test {

class ConstantConditioner : public Conditioner {
  public:
    Conditioning encode(const ConditionRequest& r) const override {
        return {Tensor::full({1, 1, 8}, r.negative ? 0.0f : 1.0f), {}};
    }
    void release_weights() const override {}
};

class BlankCodec : public LatentCodec {
  public:
    Tensor encode(const Tensor& image01, Rng&) const override {
        return Tensor::zeros({1, 4, image01.size(2) / 8, image01.size(3) / 8});
    }
    Tensor decode(const Tensor& latent, const VaeTiling&) const override {
        return Tensor::zeros({1, 3, latent.size(2) * 8, latent.size(3) * 8});
    }
    bool has_encoder() const override { return true; }
    void release_weights() const override {}
};

}  // namespace sd::test
