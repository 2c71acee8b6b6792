#include "pipeline/decode_tiling.h"

#include <algorithm>
#include <cmath>

#include "base/log.h"

namespace sd {

VaeTiling decode_tiling(const ModelComponents& m, const VaeTiling& requested, int64_t latent_h,
                        int64_t latent_w) {
    if (requested.enabled || m.memory.residency != Residency::Streamed) return requested;
    // 640-pixel tiles overlapping by a fifth cover 1024x1024 in 4 tiles (1.56x the decode's
    // work) at about 1 GiB of the KL VAE's activations; a codec that holds more a pixel (the
    // Wan VAE's frame caches) gets tiles of as many bytes.
    constexpr double kTilePixels = 640;
    const double kl_per_pixel = ActivationFootprint{}.decode_per_pixel;
    const double side = kTilePixels * std::sqrt(kl_per_pixel / m.footprint.decode_per_pixel);
    const int tile =
        std::max(8, static_cast<int>(side) / static_cast<int>(m.latent.factor) / 4 * 4);
    if (latent_h <= tile && latent_w <= tile) return requested;
    SD_LOG_INFO("low-memory mode: decoding the %lldx%lld latent in tiles of %d",
                (long long)latent_w, (long long)latent_h, tile);
    VaeTiling tiling;
    tiling.enabled = true;
    tiling.tile_size = tile;
    tiling.overlap = 0.2f;
    return tiling;
}

}  // namespace sd
