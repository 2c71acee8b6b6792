#include "families/parts/flux_dit.h"

#include "base/error.h"

namespace sd {

Tensor FluxDiffusionModel::forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                                   const ControlSignal* control) const {
    SD_CHECK(!control, "ControlNet is not supported for FLUX models");
    return flux_.forward(x, timesteps, c.context, c.vector, c.guidance, c.ref_latents, c.ref_index,
                         c.context_mask);
}

}  // namespace sd
