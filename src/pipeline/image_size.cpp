#include "pipeline/image_size.h"

#include <cstdint>

#include "base/error.h"
#include "base/log.h"

namespace sd {

int64_t size_multiple(const ModelComponents& m) {
    return m.latent.factor * (m.diffusion ? m.diffusion->down_factor() : 1);
}

void align_size_up(int& width, int& height, int64_t multiple, const char* label) {
    SD_CHECK(width > 0 && height > 0, "%s size %dx%d: width and height must be positive", label,
             width, height);
    // In 64 bits: a side near INT_MAX would overflow when rounded up.
    auto up = [multiple](int side) { return (int64_t{side} + multiple - 1) / multiple * multiple; };
    const int64_t w = up(width), h = up(height);
    SD_CHECK(w <= INT32_MAX && h <= INT32_MAX, "%s size %dx%d is too large", label, width, height);
    if (w == width && h == height) return;
    SD_LOG_WARN("align %s up %dx%d to %lldx%lld (multiple=%lld)", label, width, height,
                (long long)w, (long long)h, (long long)multiple);
    width = static_cast<int>(w);
    height = static_cast<int>(h);
}

}  // namespace sd
