// The FLUX.1 DiT (models/flux.h) as a family's diffusion model: FLUX.1 dev / schnell / Kontext
// and Chroma. It reads the context, the pooled vector (FLUX.1), the distilled guidance, the
// reference latents and the context's attention mask (Chroma) from the Conditioning.
#pragma once

#include "families/family.h"
#include "models/flux.h"

namespace sd {

class FluxDiffusionModel : public DiffusionModel {
  public:
    explicit FluxDiffusionModel(FluxModel flux) : flux_(std::move(flux)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override;
    int64_t in_channels() const override {
        return flux_.config().in_channels / (flux_.config().patch * flux_.config().patch);
    }
    // The reference aligns FLUX sizes to the VAE's factor alone; patches are padded inside.
    int64_t down_factor() const override { return 1; }
    void release_weights() const override { flux_.release_weights(); }
    size_t weight_bytes() const override { return flux_.weight_pages().bytes(); }
    CacheTarget cache_target() const override { return CacheTarget::DiT; }
    const FluxModel& flux() const { return flux_; }

  private:
    FluxModel flux_;
};

}  // namespace sd
