// Tensors in a device's memory and the per-run state of a device (a Stream), in a header free
// of any GPU API: ops and the pipeline use it the same way in a build without Vulkan (where
// open_stream() says there is none).
//
// A run opens a Stream on the device a component is placed on and moves that component's
// inputs there (to_device) and its result back (to_host): the only host <-> device transfers
// of activations, each counted. Ops whose inputs are on a device record into the stream
// (gpu/device_ops.h); nothing runs until the host needs data: to_host() submits what was
// recorded, so a network's pass is one queue submission. Weights stay host tensors; the
// stream uploads each once and keeps it (up to a byte budget beyond which they are uploaded
// again each time they are used: --max-vram).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace sd::gpu {

class Stream;  // defined by the backend (vulkan/vulkan_stream.h)

struct StreamOptions {
    // Bytes of weights kept on the device; beyond it the least recently used are dropped and
    // uploaded again when next used. 0: no limit.
    uint64_t weight_budget = 0;
};

// What crossed between host and device and how often the queue was used, since the stream
// opened.
struct StreamStats {
    int64_t submissions = 0;
    int64_t dispatches = 0;
    int64_t bytes_uploaded = 0;  // all uploads: activations and weights
    int64_t bytes_downloaded = 0;
    int64_t weight_bytes_uploaded = 0;  // weights and other host constants (Stream::constant)
    int64_t weight_bytes_resident = 0;
    int64_t device_bytes = 0;       // buffers held now (tensors, weights, the free pool)
    int64_t device_bytes_peak = 0;  // the most held at once
    int64_t cpu_fallbacks = 0;      // ops run on the host for want of a device kernel
};

// Opens device `name` ("vulkan0") for a run. Throws sd::Error naming the device and why
// (no Vulkan in the build or on the machine, no such device).
std::shared_ptr<Stream> open_stream(const std::string& name, const StreamOptions& options = {});
const std::string& stream_device_name(const Stream& stream);
StreamStats stream_stats(const Stream& stream);
// Submits what the stream recorded and waits for it.
void synchronize(Stream& stream);
// After an error part way through a network (out of device memory, a cancellation): submits
// what was recorded, so the tensors and weights uploaded in it hold their values; when that
// fails too (a lost device), the stream forgets its weights. Never throws.
void settle(Stream& stream) noexcept;

// A host tensor of a plain dtype copied into the stream's device memory (contiguous); a
// tensor already there is returned as it is. Counted as an upload.
Tensor to_device(const Tensor& t, Stream& stream);
// A device tensor brought to host memory (contiguous): submits what its stream recorded.
// A host tensor is returned as it is.
Tensor to_host(const Tensor& t);
// Several tensors brought to host memory, with one submission a stream (a ControlNet's
// residuals); host tensors are returned as they are.
std::vector<Tensor> to_host(const std::vector<Tensor>& tensors);
// The stream holding a device tensor (null for a host tensor).
std::shared_ptr<Stream> stream_of(const Tensor& t);
// An uninitialised contiguous tensor where `like` lives: on its stream's device, or in host
// memory (a model's scratch buffer for results written into views, as ESRGAN's dense blocks).
Tensor empty_like_place(const Tensor& like, const Shape& shape, DType dtype = DType::F32);
// A host tensor moved where `like` lives (uploaded to its stream; as it is for a host `like`):
// a constant a model builds beside its activations (TAEHV's zero frame before the first).
Tensor placed_like(const Tensor& host, const Tensor& like);

inline bool on_device(const Tensor& t) {
    return t.defined() && t.device() != Device::CPU;
}

}  // namespace sd::gpu
