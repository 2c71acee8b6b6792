#include "pipeline/image_tensor.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "ops/ops.h"

namespace sd {

Tensor image_to_tensor(const image::Image& image) {
    const int64_t c = image.channels, h = image.height, w = image.width;
    SD_CHECK(c >= 1 && h > 0 && w > 0 && image.pixels.size() == static_cast<size_t>(c * h * w),
             "image of %ux%u with %u channels has %zu bytes", image.width, image.height,
             image.channels, image.pixels.size());
    Tensor t = Tensor::empty({1, c, h, w});
    float* p = t.data<float>();
    for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
            for (int64_t k = 0; k < c; ++k)
                p[(k * h + y) * w + x] = image.pixels[(y * w + x) * c + k] / 255.0f;
        }
    }
    return t;
}

Tensor rgb_image_to_tensor(const image::Image& image) {
    const Tensor t = image_to_tensor(image);
    return image.channels == 1 ? concat({t, t, t}, 1) : t.narrow(1, 0, 3).contiguous();
}

Tensor color_image_to_tensor(const image::Image& image, int64_t channels) {
    SD_CHECK(channels == 3 || channels == 4, "images of %lld channels: want 3 (RGB) or 4 (RGBA)",
             static_cast<long long>(channels));
    if (channels == 3) return rgb_image_to_tensor(image);
    if (image.channels == 4) return image_to_tensor(image);
    // As the reference's ensure_image_tensor_channels: an opaque alpha after the colours.
    return concat(
        {rgb_image_to_tensor(image), Tensor::full({1, 1, image.height, image.width}, 1.0f)}, 1);
}

namespace {

// Bytes from [1, C, H, W]: round(clamp(to_unit(x), 0, 1) * 255).
template <class ToUnit>
image::Image tensor_to_bytes(const Tensor& x, const char* what, ToUnit to_unit) {
    SD_CHECK(x.dim() == 4 && x.size(0) == 1, "%s %s is not [1, C, H, W]", what,
             x.describe().c_str());
    Tensor t = x.contiguous();
    image::Image image;
    image.channels = static_cast<uint32_t>(t.size(1));
    image.height = static_cast<uint32_t>(t.size(2));
    image.width = static_cast<uint32_t>(t.size(3));
    const int64_t c = image.channels, h = image.height, w = image.width;
    image.pixels.resize(static_cast<size_t>(c * h * w));
    const float* p = t.data<float>();
    for (int64_t k = 0; k < c; ++k) {
        for (int64_t y = 0; y < h; ++y) {
            for (int64_t xx = 0; xx < w; ++xx) {
                float v = std::clamp(to_unit(p[(k * h + y) * w + xx]), 0.0f, 1.0f);
                image.pixels[(y * w + xx) * c + k] = static_cast<uint8_t>(std::lround(v * 255.0f));
            }
        }
    }
    return image;
}

}  // namespace

image::Image decoded_to_image(const Tensor& x) {
    return tensor_to_bytes(x, "decoded image", [](float v) { return (v + 1.0f) * 0.5f; });
}

std::vector<image::Image> decoded_frames(const Tensor& decoded, bool video) {
    if (!video) return {decoded_to_image(decoded)};
    std::vector<image::Image> frames;
    for (int64_t f = 0; f < decoded.size(0); ++f)
        frames.push_back(decoded_to_image(decoded.narrow(0, f, 1)));
    return frames;
}

image::Image unit_to_image(const Tensor& x) {
    return tensor_to_bytes(x, "image", [](float v) { return v; });
}

Tensor mask_to_tensor(const image::Image& mask) {
    Tensor t = image_to_tensor(mask);
    const int64_t h = mask.height, w = mask.width;
    Tensor out = Tensor::empty({1, 1, h, w});
    const float* p = t.data<float>();
    float* o = out.data<float>();
    for (int64_t i = 0; i < h * w; ++i)
        o[i] = std::round(p[i]);  // first channel, rounded to 0 or 1
    return out;
}

Tensor latent_mask(const Tensor& mask, int64_t factor) {
    const int64_t h = mask.size(2), w = mask.size(3);
    SD_CHECK(h % factor == 0 && w % factor == 0, "mask of %lldx%lld is not a multiple of %lld",
             (long long)w, (long long)h, (long long)factor);
    const int64_t lh = h / factor, lw = w / factor;
    Tensor m = mask.contiguous();
    Tensor out = Tensor::zeros({1, 1, lh, lw});
    const float* p = m.data<float>();
    float* o = out.data<float>();
    for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
            float& cell = o[(y / factor) * lw + x / factor];
            cell = std::max(cell, p[y * w + x]);
        }
    }
    return out;
}

}  // namespace sd
