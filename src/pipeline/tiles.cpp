#include "pipeline/tiles.h"

#include <algorithm>
#include <cmath>

#include "base/cancel.h"
#include "base/error.h"
#include "base/thread_pool.h"

namespace sd {
namespace {

// 6t^5 - 15t^4 + 10t^3: s(t) + s(1 - t) = 1, so two ramps over one overlap sum to one.
float smootherstep(float t) {
    t = std::clamp(t, 0.0f, 1.0f);
    return t * t * t * (t * (6.0f * t - 15.0f) + 10.0f);
}

// The blend weight of position i of a tile of n along an axis.
float ramp(int64_t i, int64_t n, const TileSpan& span, int64_t scale) {
    const int64_t before = span.overlap_before * scale, after = span.overlap_after * scale;
    float t = 1.0f;
    if (i < before) t = static_cast<float>(i) / static_cast<float>(before);
    if (i >= n - after) t = static_cast<float>(n - i) / static_cast<float>(after);
    return smootherstep(t);
}

// out[:, :, y0.., x0..] += wy * wx * part.
void blend(const Tensor& part, Tensor& out, const TileSpan& ys, const TileSpan& xs, int64_t scale) {
    const int64_t c = part.size(1), h = part.size(2), w = part.size(3);
    const int64_t oh = out.size(2), ow = out.size(3);
    const int64_t y0 = ys.offset * scale, x0 = xs.offset * scale;
    std::vector<float> wx(static_cast<size_t>(w));
    for (int64_t x = 0; x < w; ++x) wx[static_cast<size_t>(x)] = ramp(x, w, xs, scale);
    const float* src = part.data<float>();
    float* dst = out.data<float>();
    parallel_for(c * h, 64, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const int64_t k = r / h, y = r % h;
            const float wy = ramp(y, h, ys, scale);
            const float* s = src + (k * h + y) * w;
            float* d = dst + (k * oh + y0 + y) * ow + x0;
            for (int64_t x = 0; x < w; ++x) d[x] += wy * wx[static_cast<size_t>(x)] * s[x];
        }
    });
}

}  // namespace

std::vector<TileSpan> plan_tiles(int64_t size, int64_t tile, float overlap) {
    SD_CHECK(size > 0 && tile > 0, "tiling %lld pixels in tiles of %lld", (long long)size,
             (long long)tile);
    SD_CHECK(overlap >= 0.0f && overlap < 1.0f, "tile overlap %g is outside [0, 1)", overlap);
    if (tile >= size) return {{0, 0, 0}};
    const int64_t extent = size - tile;
    int64_t intervals = extent;
    if (tile > 1) {
        // The interval count whose step is nearest the target, among those where neighbours
        // overlap and no point lies in three tiles.
        const double target =
            static_cast<double>(extent) / ((1.0 - overlap) * static_cast<double>(tile));
        const int64_t lo = 1 + (extent - 1) / (tile - 1);
        const int64_t hi = std::max<int64_t>(lo, std::max<int64_t>(1, 2 * extent / tile));
        const int64_t down = std::clamp(static_cast<int64_t>(std::floor(target)), lo, hi);
        const int64_t up = std::clamp(static_cast<int64_t>(std::ceil(target)), lo, hi);
        auto error = [&](int64_t n) {
            return std::abs(1.0 / static_cast<double>(n) - 1.0 / target);
        };
        intervals = error(up) < error(down) ? up : down;
    }
    auto position = [&](int64_t i) { return i * extent / intervals; };
    std::vector<TileSpan> spans;
    for (int64_t i = 0; i <= intervals; ++i) {
        TileSpan s;
        s.offset = position(i);
        if (i > 0) s.overlap_before = position(i - 1) + tile - s.offset;
        if (i < intervals) s.overlap_after = s.offset + tile - position(i + 1);
        spans.push_back(s);
    }
    return spans;
}

Tensor process_tiles(const Tensor& input, int scale, int tile, float overlap,
                     const std::function<Tensor(const Tensor&)>& fn) {
    SD_CHECK(input.dim() == 4 && input.size(0) == 1, "tiling %s: expected [1, C, H, W]",
             input.describe().c_str());
    SD_CHECK(scale >= 1, "tiling with scale %d", scale);
    const int64_t h = input.size(2), w = input.size(3);
    const int64_t th = std::min<int64_t>(tile, h), tw = std::min<int64_t>(tile, w);
    const std::vector<TileSpan> ys = plan_tiles(h, tile, overlap),
                                xs = plan_tiles(w, tile, overlap);
    Tensor out;
    for (const TileSpan& y : ys) {
        for (const TileSpan& x : xs) {
            cancellation_point();
            const Tensor part =
                fn(input.narrow(2, y.offset, th).narrow(3, x.offset, tw).contiguous());
            SD_CHECK(part.dim() == 4 && part.size(0) == 1 && part.size(2) == th * scale &&
                         part.size(3) == tw * scale,
                     "a %lldx%lld tile gave %s; expected [1, C, %lld, %lld]", (long long)tw,
                     (long long)th, part.describe().c_str(), (long long)(th * scale),
                     (long long)(tw * scale));
            if (!out.defined()) out = Tensor::zeros({1, part.size(1), h * scale, w * scale});
            SD_CHECK(part.size(1) == out.size(1), "tiles gave %lld and %lld channels",
                     (long long)out.size(1), (long long)part.size(1));
            blend(part.contiguous(), out, y, x, scale);
        }
    }
    return out;
}

}  // namespace sd
