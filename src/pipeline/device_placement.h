// Runs a model's diffusion model, latent codec and ControlNet on the devices a DevicePlacement
// names: each is wrapped so that its inputs move to the device (gpu::to_device) and its result
// comes back (gpu::to_host, the one submission of the call); the network code in between is the
// family's own, unchanged, its ops recorded on the device (gpu/device_ops.h). One gpu::Stream a
// device, opened when the model loads and kept with it: weights are uploaded on first use and stay
// (up to the placement's weight budget, --max-vram).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/devices.h"
#include "pipeline/components.h"
#include "pipeline/load_options.h"

namespace sd {

// Wraps m's diffusion models and codec per `placement` (fit_to_devices first where it asks
// for auto-fit); logs where each runs. Throws sd::Error naming a device that cannot be opened.
void place_on_devices(ModelComponents& m, const DevicePlacement& placement);

// A codec that replaces or joins the model's (--taesd) placed as the model's codec is: on
// m.codec_stream's device when the codec runs on one, else as it is.
std::unique_ptr<LatentCodec> placed_like_the_codec(const ModelComponents& m,
                                                   std::unique_ptr<LatentCodec> codec);

// A ControlNet loaded for m (at load or later, sd_ctx_load_control_net) placed where the
// placement put ControlNets (m.control_stream), else as it is.
std::unique_ptr<ControlModel> placed_control_model(const ModelComponents& m,
                                                   std::unique_ptr<ControlModel> control);

// A network's call on a stream: its input moved to the device, its result brought back (one
// submission); after an error part way the stream is settled and the error propagates.
Tensor run_on_stream(gpu::Stream& s, const char* what, const Tensor& input,
                     const std::function<Tensor(const Tensor&)>& network);

// --auto-fit: the diffusion model and the VAE placed by their weights' sizes on the GPU with
// the most memory (its free memory where it reports it, else its size; CPU-class devices such as lavapipe are never chosen: the engine's own CPU
// kernels are faster), keeping a reserve for activations (a tenth of the memory, at least
// 1 GiB): both where they fit, else the diffusion model alone, else the diffusion model with
// its weights streamed per use under the memory left (as --max-vram); nothing where no GPU
// has 256 MiB to spare. `asked` keeps its weight budget (an explicit --max-vram caps what is
// used) and vae_on_cpu; `why` says what was chosen, in one line.
DevicePlacement fit_to_devices(const std::vector<gpu::DeviceInfo>& devices,
                               const DevicePlacement& asked, uint64_t diffusion_bytes,
                               uint64_t vae_bytes, std::string& why);

}  // namespace sd
