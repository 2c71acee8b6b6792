// Runs a model's diffusion model and latent codec on the devices a DevicePlacement names: each
// is wrapped so that its inputs move to the device (gpu::to_device) and its result comes back
// (gpu::to_host, the one submission of the call); the network code in between is the family's
// own, unchanged, its ops recorded on the device (gpu/device_ops.h). One gpu::Stream a device,
// opened when the model loads and kept with it: weights are uploaded on first use and stay
// (up to the placement's weight budget, --max-vram).
#pragma once

#include "pipeline/components.h"
#include "pipeline/load_options.h"

namespace sd {

// Wraps m's diffusion models and codec per `placement`; logs where each runs. Throws
// sd::Error naming a device that cannot be opened.
void place_on_devices(ModelComponents& m, const DevicePlacement& placement);

}  // namespace sd
