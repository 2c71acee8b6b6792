#include "pipeline/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

#include "base/error.h"
#include "base/log.h"
#include "pipeline/decode_tiling.h"
#include "pipeline/ref_images.h"

namespace sd {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The allocator's cache, the text encoders' scratch and the process itself.
constexpr double kOverhead = 512.0 * 1024 * 1024;

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

MemoryEstimate estimate_generation_memory(const MemoryInputs& in) {
    const double pixels = static_cast<double>(in.width) * static_cast<double>(in.height);
    const double sampling =
        in.diffusion_weights + in.footprint.diffusion_per_pixel * (pixels + in.ref_pixels);
    const double decoding = in.codec_weights + decode_activations(in, pixels);
    MemoryEstimate e;
    e.weights = sampling >= decoding ? in.diffusion_weights : in.codec_weights;
    // The 8-bit results of the batch stay alive to the end, next to either phase.
    e.activations =
        std::max(sampling, decoding) - e.weights + pixels * 3.0 * in.batch_count + kOverhead;
    return e;
}

MemoryInputs memory_inputs(const ModelComponents& m, const ImageRequest& r) {
    MemoryInputs in;
    if (m.memory.residency != Residency::Streamed) {
        in.diffusion_weights = static_cast<double>(m.diffusion->weight_bytes());
        if (m.control) in.diffusion_weights += static_cast<double>(m.control->weight_bytes());
        in.codec_weights = static_cast<double>(m.codec->weight_bytes());
    }
    in.footprint = m.footprint;
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
    const VaeTiling tiling =
        decode_tiling(m, r.vae_tiling, in.height / in.latent_factor, in.width / in.latent_factor);
    in.tiled_decode = tiling.enabled;
    in.tile_size = tiling.tile_size;
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
        "%s: estimated peak memory %.2f GiB (weights %.2f + activations %.2f), %.2f GiB "
        "available",
        what.c_str(), e.total() / kGiB, e.weights / kGiB, e.activations / kGiB, available / kGiB);
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
