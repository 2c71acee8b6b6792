#include "pipeline/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

#include "base/error.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "ops/kernel_scratch.h"
#include "pipeline/decode_tiling.h"
#include "pipeline/ref_images.h"

namespace sd {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The allocator's cache, the text encoders' activations and the process itself.
constexpr double kOverhead = 512.0 * 1024 * 1024;

// The widest kernels of the families' networks, for their scratch (kernel_scratch_bytes):
// the longest reduction of any product (FLUX's single blocks' linear2: 3072 + 12288), the
// AutoencoderKL's widest 3x3 convs (ch 128 x ch_mult 4, Winograd), its conv_out's input
// (128 channels -> 3, direct, at the image's size), and the UNets' conv_out (320 -> 4,
// direct, at the latent's size). A DiT or TAESD takes less: the estimate stays above it.
constexpr int64_t kWidestK = 15360;
constexpr int64_t kVaeWidest = 512;
constexpr int64_t kVaeOutChannels = 128;
constexpr int64_t kUnetOutChannels = 320;

double decode_activations(const MemoryInputs& in, double pixels) {
    if (!in.tiled_decode) return in.footprint.decode_per_pixel * pixels;
    const double tile_px = static_cast<double>(in.tile_size * in.latent_factor);
    // One tile's activations, then the full f32 image and its blending weights.
    return in.footprint.decode_per_pixel * tile_px * tile_px + pixels * 4.0 * 4.0;
}

// "Name: 123 kB" from a /proc file, in bytes; negative when absent.
double proc_kb(const char* path, const char* key) {
    std::ifstream in(path);
    std::string line;
    const std::string prefix = std::string(key) + ":";
    while (std::getline(in, line)) {
        if (line.compare(0, prefix.size(), prefix) != 0) continue;
        return std::strtod(line.c_str() + prefix.size(), nullptr) * 1024.0;
    }
    return -1.0;
}

}  // namespace

// Every slot a thread grows stays while the run lives, so the kernels' bounds add up (the
// conv kinds share one slot: summing them stays above it).
double kernel_scratch_bytes(const PhaseKernels& k, int threads) {
    if (threads <= 0) return 0;
    ScratchBound sum;
    const auto add = [&](const ScratchBound& b) {
        sum.per_thread += b.per_thread;
        sum.per_call += b.per_call;
    };
    if (k.gemm_k > 0) add(gemm_scratch_bound(k.gemm_k));
    if (k.direct_channels > 0) {  // 3x3, padding 1: padded rows of the output's width + 2
        add(conv_direct_scratch_bound(k.direct_channels, 3, 3, k.direct_width + 2, k.direct_height,
                                      threads));
    }
    if (k.winograd_channels > 0)
        add(winograd_scratch_bound(k.winograd_channels, k.winograd_channels));
    return sum.per_thread * threads + sum.per_call;
}

MemoryEstimate estimate_generation_memory(const MemoryInputs& in) {
    const double pixels = static_cast<double>(in.width) * static_cast<double>(in.height);
    const double sampling_scratch = kernel_scratch_bytes(in.sampling_kernels, in.threads);
    const double decode_scratch = kernel_scratch_bytes(in.decode_kernels, in.threads);
    const double sampling = in.diffusion_weights +
                            in.footprint.diffusion_per_pixel * (pixels + in.ref_pixels) +
                            sampling_scratch;
    const double decoding = in.codec_weights + decode_activations(in, pixels) + decode_scratch;
    MemoryEstimate e;
    const bool sampling_peak = sampling >= decoding;
    e.weights = sampling_peak ? in.diffusion_weights : in.codec_weights;
    e.scratch = sampling_peak ? sampling_scratch : decode_scratch;
    // The 8-bit results of the batch stay alive to the end, next to either phase.
    e.activations =
        std::max(sampling, decoding) - e.weights + pixels * 3.0 * in.batch_count + kOverhead;
    return e;
}

MemoryInputs memory_inputs(const ModelComponents& m, const ImageRequest& r) {
    MemoryInputs in;
    in.footprint = m.footprint;
    // A part on a device keeps its weights and activations there: the host only reads its
    // weights' file pages on the way (reclaimable, mapped).
    const bool diffusion_on_device = m.diffusion->on_device();
    const bool codec_on_device = m.codec && m.codec->on_device();
    if (diffusion_on_device) in.footprint.diffusion_per_pixel = 0;
    if (codec_on_device) in.footprint.decode_per_pixel = 0;
    if (m.memory.residency != Residency::Streamed) {
        if (!diffusion_on_device) {
            in.diffusion_weights = static_cast<double>(m.diffusion->weight_bytes());
            if (m.high_noise_diffusion)
                in.diffusion_weights += static_cast<double>(m.high_noise_diffusion->weight_bytes());
        }
        if (m.control && !m.control->on_device())
            in.diffusion_weights += static_cast<double>(m.control->weight_bytes());
        if (!codec_on_device) in.codec_weights = static_cast<double>(m.codec->weight_bytes());
    }
    in.width = std::max(r.width, r.hires.enabled ? r.hires.target_width : 0);
    in.height = std::max(r.height, r.hires.enabled ? r.hires.target_height : 0);
    in.latent_factor = m.latent.factor;
    in.batch_count = r.batch_count;
    if (!r.ref_images.empty() && m.ref_images.supported) {
        const RefImageParams p = parse_ref_image_args(r.ref_image_args, m.ref_images.preset);
        for (const image::Image& ref : r.ref_images) {
            const auto [w, h] = p.resize_before_vae
                                    ? ref_vae_size(ref.width, ref.height, r.width, r.height, p,
                                                   m.ref_images.size_multiple)
                                    : std::pair<int64_t, int64_t>{ref.width, ref.height};
            in.ref_pixels += static_cast<double>(w) * static_cast<double>(h);
        }
    }
    // Qwen-Image-Layered's layers are frames of the image's size in every model call.
    if (m.rgba_layers)
        in.ref_pixels += static_cast<double>(r.layers) * static_cast<double>(r.width) *
                         static_cast<double>(r.height);
    const VaeTiling tiling =
        decode_tiling(m, r.vae_tiling, in.height / in.latent_factor, in.width / in.latent_factor);
    in.tiled_decode = tiling.enabled;
    in.tile_size = tiling.tile_size;
    in.threads = m.memory.threads > 0 ? m.memory.threads : num_threads();
    in.sampling_kernels.gemm_k = kWidestK;
    in.sampling_kernels.direct_channels = kUnetOutChannels;
    in.sampling_kernels.direct_width = in.width / in.latent_factor;
    in.sampling_kernels.direct_height = in.height / in.latent_factor;
    in.decode_kernels.gemm_k = kWidestK;
    in.decode_kernels.winograd_channels = kVaeWidest;
    in.decode_kernels.direct_channels = kVaeOutChannels;
    const int64_t tile_px = int64_t{in.tile_size} * in.latent_factor;
    in.decode_kernels.direct_width = in.tiled_decode ? std::min(in.width, tile_px) : in.width;
    in.decode_kernels.direct_height = in.tiled_decode ? std::min(in.height, tile_px) : in.height;
    if (diffusion_on_device) in.sampling_kernels = {};  // the device's kernels, not the host's
    if (codec_on_device) in.decode_kernels = {};
    return in;
}

MemoryEstimate estimate_generation_memory(const ModelComponents& m, const ImageRequest& r) {
    return estimate_generation_memory(memory_inputs(m, r));
}

double available_memory_bytes() {
    const double available = proc_kb("/proc/meminfo", "MemAvailable");
    if (available < 0) return std::numeric_limits<double>::infinity();
    return available + std::max(0.0, proc_kb("/proc/self/status", "RssFile"));
}

void check_size_before_loading(int width, int height, int batch_count, bool tiled_decode) {
    MemoryInputs in;
    in.width = (int64_t{std::max(width, 1)} + 63) / 64 * 64;
    in.height = (int64_t{std::max(height, 1)} + 63) / 64 * 64;
    in.footprint.diffusion_per_pixel /= 2;  // a floor for any family: only absurd sizes fail
    in.footprint.decode_per_pixel /= 2;
    in.batch_count = std::max(batch_count, 1);
    in.tiled_decode = tiled_decode;
    const std::string what =
        "a " + std::to_string(in.width) + "x" + std::to_string(in.height) + " image";
    check_generation_memory(estimate_generation_memory(in), available_memory_bytes(), in, what);
}

void check_generation_memory(const MemoryEstimate& e, double available, const MemoryInputs& in,
                             const std::string& what) {
    SD_LOG_DEBUG(
        "%s: estimated peak memory %.2f GiB (weights %.2f + activations %.2f, of which kernel "
        "scratch %.3f), %.2f GiB available",
        what.c_str(), e.total() / kGiB, e.weights / kGiB, e.activations / kGiB, e.scratch / kGiB,
        available / kGiB);
    if (e.total() <= available) return;
    // What would bring it within the machine: a tiled decode, weights streamed layer by
    // layer (which tiles large decodes too), or else only a smaller size.
    MemoryInputs tiled = in, streamed = in;
    tiled.tiled_decode = streamed.tiled_decode = true;
    streamed.diffusion_weights = streamed.codec_weights = 0;
    std::string help = "a smaller size";
    if (!in.tiled_decode && estimate_generation_memory(tiled).total() <= available)
        help = "--vae-tiling (a tiled decode) or a smaller size";
    else if (in.diffusion_weights > 0 && estimate_generation_memory(streamed).total() <= available)
        help = "--stream-layers (weights read layer by layer) or a smaller size";
    fail(
        "%s needs about %.1f GiB (weights %.1f GiB + activations %.1f GiB) but this machine has "
        "%.1f GiB available; %s would help",
        what.c_str(), e.total() / kGiB, e.weights / kGiB, e.activations / kGiB, available / kGiB,
        help.c_str());
}

}  // namespace sd
