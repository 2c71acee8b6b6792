#include "pipeline/decode_tiling.h"

#include "base/log.h"

namespace sd {

VaeTiling decode_tiling(const ModelComponents& m, const VaeTiling& requested, int64_t latent_h,
                        int64_t latent_w) {
    // 80-latent-pixel tiles overlapping by 16 cover 1024x1024 in 4 tiles (1.56x the decode's
    // work) at about 1 GiB; the blended result differs from the untiled one in the overlaps.
    constexpr int kTile = 80;
    if (requested.enabled || m.memory.residency != Residency::Streamed) return requested;
    if (latent_h <= kTile && latent_w <= kTile) return requested;
    SD_LOG_INFO("low-memory mode: decoding the %lldx%lld latent in tiles of %d",
                (long long)latent_w, (long long)latent_h, kTile);
    VaeTiling tiling;
    tiling.enabled = true;
    tiling.tile_size = kTile;
    tiling.overlap = 0.2f;
    return tiling;
}

}  // namespace sd
