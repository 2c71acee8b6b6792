#include "image/image_resize.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/error.h"

namespace sd::image {
namespace {

const std::array<float, 256>& srgb_to_linear() {
    static const std::array<float, 256> table = [] {
        std::array<float, 256> t{};
        for (int i = 0; i < 256; ++i) {
            const float c = static_cast<float>(i) / 255.0f;
            t[i] = c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
        }
        return t;
    }();
    return table;
}

uint8_t linear_to_srgb(float v) {
    v = std::clamp(v, 0.0f, 1.0f);
    const float c = v <= 0.0031308f ? v * 12.92f : 1.055f * std::pow(v, 1.0f / 2.4f) - 0.055f;
    return static_cast<uint8_t>(std::lround(c * 255.0f));
}

struct Tap {
    uint32_t index;
    float weight;
};

// For each output position, the source samples a box of the output pixel's footprint
// covers (at least one source pixel wide), with weights summing to one.
std::vector<std::vector<Tap>> box_taps(uint32_t in, uint32_t out) {
    std::vector<std::vector<Tap>> taps(out);
    const double scale = static_cast<double>(in) / out;
    const double half = std::max(scale, 1.0) / 2;
    for (uint32_t o = 0; o < out; ++o) {
        const double center = (o + 0.5) * scale;
        const double lo = center - half, hi = center + half;
        double total = 0;
        const int64_t first = static_cast<int64_t>(std::floor(lo));
        const int64_t last = static_cast<int64_t>(std::ceil(hi));
        for (int64_t i = first; i < last; ++i) {
            const double w = std::min<double>(hi, i + 1) - std::max<double>(lo, i);
            if (w <= 0) continue;
            const uint32_t clamped = static_cast<uint32_t>(std::clamp<int64_t>(i, 0, in - 1));
            taps[o].push_back({clamped, static_cast<float>(w)});
            total += w;
        }
        for (Tap& t : taps[o]) t.weight = static_cast<float>(t.weight / total);
    }
    return taps;
}

}  // namespace

Image crop_to_aspect(const Image& image, uint32_t width, uint32_t height) {
    if (width == 0 || height == 0) fail("cannot crop to an empty size %ux%u", width, height);
    const double target = static_cast<double>(width) / height;
    const double source = static_cast<double>(image.width) / image.height;
    uint32_t crop_w = image.width, crop_h = image.height, x0 = 0, y0 = 0;
    if (source > target) {
        crop_w = std::max<uint32_t>(1, static_cast<uint32_t>(image.height * target));
        x0 = (image.width - crop_w) / 2;
    } else if (source < target) {
        crop_h = std::max<uint32_t>(1, static_cast<uint32_t>(image.width / target));
        y0 = (image.height - crop_h) / 2;
    }
    if (crop_w == image.width && crop_h == image.height) return image;
    Image out;
    out.width = crop_w;
    out.height = crop_h;
    out.channels = image.channels;
    const size_t row = static_cast<size_t>(crop_w) * image.channels;
    out.pixels.resize(row * crop_h);
    for (uint32_t y = 0; y < crop_h; ++y) {
        const uint8_t* src =
            &image.pixels[((static_cast<size_t>(y0) + y) * image.width + x0) * image.channels];
        std::copy(src, src + row, &out.pixels[y * row]);
    }
    return out;
}

Image resize(const Image& image, uint32_t width, uint32_t height) {
    if (width == 0 || height == 0) fail("cannot resize to an empty size %ux%u", width, height);
    const auto& lin = srgb_to_linear();
    const uint32_t c = image.channels;
    const auto xt = box_taps(image.width, width);
    const auto yt = box_taps(image.height, height);
    // Horizontal pass into linear floats, then vertical pass back to sRGB bytes.
    std::vector<float> rows(static_cast<size_t>(image.height) * width * c);
    for (uint32_t y = 0; y < image.height; ++y) {
        const uint8_t* src = &image.pixels[static_cast<size_t>(y) * image.width * c];
        float* dst = &rows[static_cast<size_t>(y) * width * c];
        for (uint32_t x = 0; x < width; ++x)
            for (uint32_t k = 0; k < c; ++k) {
                float sum = 0;
                for (const Tap& t : xt[x]) sum += t.weight * lin[src[t.index * c + k]];
                dst[x * c + k] = sum;
            }
    }
    Image out;
    out.width = width;
    out.height = height;
    out.channels = c;
    out.pixels.resize(static_cast<size_t>(width) * height * c);
    const size_t row = static_cast<size_t>(width) * c;
    for (uint32_t y = 0; y < height; ++y)
        for (size_t i = 0; i < row; ++i) {
            float sum = 0;
            for (const Tap& t : yt[y]) sum += t.weight * rows[t.index * row + i];
            out.pixels[y * row + i] = linear_to_srgb(sum);
        }
    return out;
}

Image fit(const Image& image, uint32_t width, uint32_t height) {
    if (image.width == width && image.height == height) return image;
    return resize(crop_to_aspect(image, width, height), width, height);
}

}  // namespace sd::image
