// The peak memory of a generation, estimated before anything is allocated, and the check
// of it against what the machine has: a size the machine cannot hold is refused at once
// with both figures, instead of running into the kernel's OOM killer.
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/request.h"

namespace sd {

// The widest kernels a phase runs, for the scratch they take (ops/kernel_scratch.h bounds it
// from their blocking constants); 0 where the phase runs none of that kind.
struct PhaseKernels {
    int64_t gemm_k = 0;             // the longest reduction of its products
    int64_t winograd_channels = 0;  // its widest Winograd conv (C = O)
    int64_t direct_channels = 0;    // input channels of its widest direct conv (3x3, O <= 64)
    int64_t direct_width = 0, direct_height = 0;  // that conv's output, in pixels
};

// The kernel scratch of a phase run on `threads` threads: each thread's slots at the widest
// kernels' bound, plus what one op takes once (the transformed Winograd weight, the GEMM's
// shared chunk).
double kernel_scratch_bytes(const PhaseKernels& kernels, int threads);

// What the estimate needs, in bytes and pixels.
struct MemoryInputs {
    double diffusion_weights = 0;  // resident while sampling (0 when streamed)
    double codec_weights = 0;      // resident while decoding (0 when streamed)
    ActivationFootprint footprint;
    int64_t width = 0, height = 0;  // the largest pass (a hires target when larger)
    double ref_pixels = 0;          // reference images' (their tokens join every model call)
    int64_t latent_factor = 8;
    int batch_count = 1;
    bool tiled_decode = false;
    int tile_size = 32;  // in latent pixels, when tiled
    // The run's threads and each phase's widest kernels, for their scratch (memory_inputs
    // fills them; left at 0, no scratch is counted).
    int threads = 0;
    PhaseKernels sampling_kernels, decode_kernels;
};

struct MemoryEstimate {
    double weights = 0;      // resident at the peak
    double activations = 0;  // the peak phase's, its kernel scratch included
    double scratch = 0;      // of which the kernels' scratch (kernel_scratch_bytes)
    double total() const { return weights + activations; }
};

// The larger of the sampling phase (diffusion weights + one model call's activations) and
// the decode phase (codec weights + the decode's activations, or one tile's plus the full
// image when tiled), each with its kernels' scratch; results and latents on top.
MemoryEstimate estimate_generation_memory(const MemoryInputs& in);

// The inputs for a settled request on a loaded model: its weights as its residency keeps
// them, the family's footprint, the decode's tiling (decode_tiling).
MemoryInputs memory_inputs(const ModelComponents& model, const ImageRequest& r);

// The estimate for a settled request on a loaded model (its residency and tiling).
MemoryEstimate estimate_generation_memory(const ModelComponents& model, const ImageRequest& r);

// What this process can still use: MemAvailable (/proc/meminfo) plus the file pages it
// already has mapped (RssFile: weights it holds count in the estimate too). Infinity when
// /proc cannot be read.
double available_memory_bytes();

// Throws sd::Error when `estimate` exceeds `available`: the message gives both (GiB), the
// size, and what would help (--vae-tiling when the decode is the peak and tiling fits, a
// smaller size, the low-memory mode).
void check_generation_memory(const MemoryEstimate& estimate, double available,
                             const MemoryInputs& in, const std::string& what);

// Before any model is loaded: half the UNet families' activations alone (no weights, a
// 64-pixel grid) for a width x height image against the machine, so that a program can
// refuse an impossible size at once instead of after loading the model. Throws as
// check_generation_memory.
void check_size_before_loading(int width, int height, int batch_count, bool tiled_decode);

}  // namespace sd
