#include "pipeline/vae_tiling.h"

#include <algorithm>
#include <vector>

#include "base/cancel.h"
#include "base/error.h"
#include "gpu/device_tensor.h"
#include "ops/ops.h"

namespace sd {
namespace {

// Tile starts along one axis: evenly spread so the last tile ends at the edge.
std::vector<int64_t> tile_starts(int64_t size, int64_t tile, int64_t stride) {
    if (size <= tile) return {0};
    const int64_t n = (size - tile + stride - 1) / stride + 1;
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < n; ++i) starts.push_back(i * (size - tile) / (n - 1));
    return starts;
}

// Blend weight of output pixel p of a tile spanning [begin, end) along an axis of `size`:
// ramps over `ramp` pixels at every side that touches another tile.
float ramp_weight(int64_t p, int64_t begin, int64_t end, int64_t size, int64_t ramp) {
    float w = 1.0f;
    if (begin > 0 && p - begin < ramp)
        w = std::min(w, (static_cast<float>(p - begin) + 0.5f) / static_cast<float>(ramp));
    if (end < size && end - p <= ramp)
        w = std::min(w, (static_cast<float>(end - p) - 0.5f) / static_cast<float>(ramp));
    return w;
}

}  // namespace

Tensor decode_tiled(const AutoencoderKL& vae, const Tensor& z, int tile, float overlap) {
    return decode_tiled([&vae](const Tensor& part) { return vae.decode(part); }, z, tile, overlap);
}

Tensor decode_tiled(const TileDecoder& decode, const Tensor& z, int tile, float overlap) {
    SD_CHECK(z.dim() == 4, "tiled VAE decode of %s: expected [N, C, h, w]", z.describe().c_str());
    SD_CHECK(tile >= 8, "--vae-tile-size %d is too small (at least 8 latent pixels)", tile);
    SD_CHECK(overlap >= 0.0f && overlap <= 0.5f, "--vae-tile-overlap %g is outside [0, 0.5]",
             overlap);
    const int64_t h = z.size(2), w = z.size(3);
    const int64_t th = std::min<int64_t>(tile, h), tw = std::min<int64_t>(tile, w);
    const int64_t overlap_px = static_cast<int64_t>(static_cast<float>(tile) * overlap);
    const int64_t stride = std::max<int64_t>(1, tile - overlap_px);
    const std::vector<int64_t> ys = tile_starts(h, th, stride), xs = tile_starts(w, tw, stride);
    Tensor out, weight;
    int64_t f = 0, H = 0, W = 0;  // the decoder's scale, and the whole result's size
    for (int64_t y0 : ys) {
        for (int64_t x0 : xs) {
            cancellation_point();
            // A latent on a device: each tile is decoded there and blended here.
            const Tensor tile_z = z.narrow(2, y0, th).narrow(3, x0, tw);
            const Tensor part = gpu::to_host(decode(permute_copy(tile_z, {0, 1, 2, 3})));
            if (!out.defined()) {
                f = part.size(2) / th;
                SD_CHECK(f >= 1 && part.size(2) == f * th && part.size(3) == f * tw,
                         "tiled VAE decode: a %lldx%lld tile decoded to %s", (long long)tw,
                         (long long)th, part.describe().c_str());
                H = h * f, W = w * f;
                out = Tensor::zeros({part.size(0), part.size(1), H, W});
                weight = Tensor::zeros({H, W});
            }
            // Every frame of a video tile (the batch) is blended with the same weights.
            const int64_t frames = part.size(0), c = part.size(1), ph = th * f, pw = tw * f;
            const int64_t py0 = y0 * f, px0 = x0 * f, ramp = std::max<int64_t>(1, overlap_px * f);
            const float* src = part.data<float>();
            float* dst = out.data<float>();
            float* wsum = weight.data<float>();
            for (int64_t y = 0; y < ph; ++y) {
                float wy = ramp_weight(py0 + y, py0, py0 + ph, H, ramp);
                for (int64_t x = 0; x < pw; ++x) {
                    float wt = wy * ramp_weight(px0 + x, px0, px0 + pw, W, ramp);
                    const int64_t o = (py0 + y) * W + px0 + x;
                    wsum[o] += wt;
                    for (int64_t k = 0; k < frames * c; ++k)
                        dst[k * H * W + o] += wt * src[(k * ph + y) * pw + x];
                }
            }
        }
    }
    const int64_t plane = H * W;
    float* dst = out.data<float>();
    const float* wsum = weight.data<float>();
    for (int64_t k = 0; k < out.size(0) * out.size(1); ++k) {
        for (int64_t i = 0; i < plane; ++i) dst[k * plane + i] /= std::max(wsum[i], 1e-6f);
    }
    return out;
}

}  // namespace sd
