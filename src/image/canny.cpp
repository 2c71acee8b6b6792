#include "image/canny.h"

#include <cmath>
#include <vector>

#include "base/error.h"
#include "tensor/half.h"

namespace sd::image {
namespace {

constexpr float kPi = 3.14159265358979323846f;

// A W x H plane of floats, (x, y) addressed.
struct Plane {
    int w = 0, h = 0;
    std::vector<float> v;
    Plane(int width, int height) : w(width), h(height), v(static_cast<size_t>(width) * height) {}
    float& at(int x, int y) { return v[static_cast<size_t>(y) * w + x]; }
    float at(int x, int y) const { return v[static_cast<size_t>(y) * w + x]; }
};

float to_f16(float x) {
    return f16_to_f32(f32_to_f16(x));
}

// Zero-padded cross-correlation with a k x k kernel (row-major), as ggml's conv_2d with an
// f16 kernel computes it: input and kernel rounded to f16, products summed in double.
Plane convolve(const Plane& in, const std::vector<float>& kernel, int k) {
    const int pad = k / 2;
    std::vector<float> kh(kernel.size());
    for (size_t i = 0; i < kernel.size(); ++i) kh[i] = to_f16(kernel[i]);
    Plane rounded = in;
    for (float& x : rounded.v) x = to_f16(x);
    Plane out(in.w, in.h);
    for (int y = 0; y < in.h; ++y) {
        for (int x = 0; x < in.w; ++x) {
            double sum = 0.0;
            for (int ky = 0; ky < k; ++ky) {
                const int sy = y + ky - pad;
                for (int kx = 0; kx < k; ++kx) {
                    const int sx = x + kx - pad;
                    if (sy < 0 || sy >= in.h || sx < 0 || sx >= in.w) continue;
                    sum += static_cast<double>(rounded.at(sx, sy) * kh[ky * k + kx]);
                }
            }
            out.at(x, y) = static_cast<float>(sum);
        }
    }
    return out;
}

std::vector<float> gaussian_kernel(int k, float sigma) {
    const int mid = k / 2;
    const float normal = 1.0f / (2.0f * kPi * std::pow(sigma, 2.0f));
    std::vector<float> out(static_cast<size_t>(k) * k);
    for (int y = 0; y < k; ++y) {
        for (int x = 0; x < k; ++x) {
            const float gx = static_cast<float>(y - mid), gy = static_cast<float>(x - mid);
            out[static_cast<size_t>(y) * k + x] =
                std::exp(-((gx * gx + gy * gy) / (2.0f * std::pow(sigma, 2.0f)))) * normal;
        }
    }
    return out;
}

// Keeps a magnitude where it is not below its two neighbours across the edge. The
// reference's angle tests read "0 >= angle", "22.5 >= angle" ..., so every angle up to
// 157.5 degrees compares with the pixels above and below, and steeper ones with 1.
void non_max_suppression(Plane& out, const Plane& g, const Plane& dx, const Plane& dy) {
    for (int y = 1; y < out.h - 1; ++y) {
        for (int x = 1; x < out.w - 1; ++x) {
            float angle = std::atan2(dy.at(x, y), dx.at(x, y)) * 180.0f / kPi;
            if (angle < 0.0f) angle += 180.0f;
            float q = 1.0f, r = 1.0f;
            if ((0.0f >= angle && angle < 22.5f) || (157.5f >= angle && angle <= 180.0f)) {
                q = g.at(x, y + 1), r = g.at(x, y - 1);
            } else if (22.5f >= angle && angle < 67.5f) {
                q = g.at(x + 1, y - 1), r = g.at(x - 1, y + 1);
            } else if (67.5f >= angle && angle < 112.5f) {
                q = g.at(x + 1, y), r = g.at(x - 1, y);
            } else if (112.5f >= angle && angle < 157.5f) {
                q = g.at(x - 1, y - 1), r = g.at(x + 1, y + 1);
            }
            const float cur = g.at(x, y);
            out.at(x, y) = cur >= q && cur >= r ? cur : 0.0f;
        }
    }
}

// Double threshold (values under the low one stay as they are), a 3-pixel border cleared,
// then one raster pass in place: a weak pixel becomes strong next to a strong one (six of
// its neighbours, as the reference looks), else 0.
void threshold_hysteresis(Plane& img, const CannyOptions& o) {
    float max = -INFINITY;
    for (float v : img.v) max = v > max ? v : max;
    const float high = max * o.high_threshold, low = high * o.low_threshold;
    for (float& v : img.v) {
        if (v >= high)
            v = o.strong;
        else if (v <= high && v >= low)
            v = o.weak;
    }
    for (int y = 0; y < img.h; ++y) {
        for (int x = 0; x < img.w; ++x) {
            if (x < 3 || x > img.w - 3 || y < 3 || y > img.h - 3) img.at(x, y) = 0.0f;
        }
    }
    for (int y = 1; y < img.h - 1; ++y) {
        for (int x = 1; x < img.w - 1; ++x) {
            if (img.at(x, y) != o.weak) continue;
            const bool linked = img.at(x + 1, y - 1) == o.strong || img.at(x + 1, y) == o.strong ||
                                img.at(x, y - 1) == o.strong || img.at(x, y + 1) == o.strong ||
                                img.at(x - 1, y - 1) == o.strong || img.at(x - 1, y) == o.strong;
            img.at(x, y) = linked ? o.strong : 0.0f;
        }
    }
}

}  // namespace

void canny(Image& image, const CannyOptions& o) {
    const uint32_t c = image.channels;
    SD_CHECK(c == 1 || c == 3 || c == 4, "Canny: an image of %u channels (expected 1, 3 or 4)", c);
    SD_CHECK(image.width > 0 && image.height > 0 &&
                 image.pixels.size() == static_cast<size_t>(image.width) * image.height * c,
             "Canny: a %ux%u image with %zu bytes", image.width, image.height, image.pixels.size());
    const int w = static_cast<int>(image.width), h = static_cast<int>(image.height);
    Plane gray(w, h);
    for (size_t i = 0; i < gray.v.size(); ++i) {
        const uint8_t* p = &image.pixels[i * c];
        const float r = p[0] / 255.0f, g = p[c == 1 ? 0 : 1] / 255.0f,
                    b = p[c == 1 ? 0 : 2] / 255.0f;
        gray.v[i] = 0.2989f * r + 0.5870f * g + 0.1140f * b;
    }
    gray = convolve(gray, gaussian_kernel(5, 1.4f), 5);
    const Plane dx = convolve(gray, {-1, 0, 1, -2, 0, 2, -1, 0, 1}, 3);
    const Plane dy = convolve(gray, {1, 2, 1, 0, 0, 0, -1, -2, -1}, 3);
    Plane mag(w, h);
    float max = -INFINITY;
    for (size_t i = 0; i < mag.v.size(); ++i) {
        mag.v[i] = std::sqrt(dx.v[i] * dx.v[i] + dy.v[i] * dy.v[i]);
        max = mag.v[i] > max ? mag.v[i] : max;
    }
    const float scale = 1.0f / max;  // a flat image gives NaNs, which suppression drops
    for (float& m : mag.v) m *= scale;
    // The suppressed magnitudes replace the blurred grey, whose 1-pixel border stays.
    non_max_suppression(gray, mag, dx, dy);
    threshold_hysteresis(gray, o);
    for (size_t i = 0; i < gray.v.size(); ++i) {
        float v = o.inverse ? 1.0f - gray.v[i] : gray.v[i];
        v = std::isnan(v) ? 0.0f : std::fmin(std::fmax(v, 0.0f), 1.0f);
        const auto byte = static_cast<uint8_t>(v * 255.0f);  // truncated, as the reference
        for (uint32_t k = 0; k < (c == 1 ? 1u : 3u); ++k) image.pixels[i * c + k] = byte;
    }
}

}  // namespace sd::image
