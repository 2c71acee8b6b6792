#include "ops/interpolate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"

namespace sd {
namespace {

constexpr double kPi = 3.14159265358979323846;

double linear_weight(double x) {
    x = std::abs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

double cubic_weight(double x) {
    constexpr double a = -0.75;
    x = std::abs(x);
    if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    return 0.0;
}

double sinc(double x) {
    return std::abs(x) < 1e-12 ? 1.0 : std::sin(kPi * x) / (kPi * x);
}

double lanczos_weight(double x) {
    x = std::abs(x);
    return x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
}

struct Tap {
    int64_t index;
    double weight;
};

// For each output index along an axis: the input indices it reads and their weights.
std::vector<std::vector<Tap>> axis_taps(int64_t in, int64_t out, InterpolateMode mode,
                                        bool antialias) {
    std::vector<std::vector<Tap>> taps(static_cast<size_t>(out));
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    for (int64_t o = 0; o < out; ++o) {
        std::vector<Tap>& t = taps[static_cast<size_t>(o)];
        if (mode == InterpolateMode::Nearest) {
            t.push_back({o * in / out, 1.0});
            continue;
        }
        const double center = (static_cast<double>(o) + 0.5) * scale - 0.5;
        const int64_t nearest =
            std::clamp<int64_t>(static_cast<int64_t>(std::floor(center + 0.5)), 0, in - 1);
        if (mode == InterpolateMode::NearestExact) {
            t.push_back({nearest, 1.0});
            continue;
        }
        const double widen = antialias ? std::max(1.0, scale) : 1.0;
        const double radius = mode == InterpolateMode::Bilinear  ? 1.0
                              : mode == InterpolateMode::Bicubic ? 2.0
                                                                 : 3.0;
        const int64_t first = static_cast<int64_t>(std::ceil(center - radius * widen));
        const int64_t last = static_cast<int64_t>(std::floor(center + radius * widen));
        double sum = 0.0;
        for (int64_t i = first; i <= last; ++i) {
            const double d = (center - static_cast<double>(i)) / widen;
            const double w = mode == InterpolateMode::Bilinear  ? linear_weight(d)
                             : mode == InterpolateMode::Bicubic ? cubic_weight(d)
                                                                : lanczos_weight(d);
            if (w == 0.0) continue;
            t.push_back({std::clamp<int64_t>(i, 0, in - 1), w});
            sum += w;
        }
        if ((antialias || mode == InterpolateMode::Lanczos) && std::abs(sum) > 1e-12)
            for (Tap& tap : t) tap.weight /= sum;
        if (t.empty()) t.push_back({nearest, 1.0});
    }
    return taps;
}

}  // namespace

Tensor interpolate(const Tensor& x, int64_t out_h, int64_t out_w, InterpolateMode mode,
                   bool antialias) {
    SD_CHECK(x.defined() && x.dtype() == DType::F32 && x.dim() >= 2,
             "interpolate: input %s must be f32 [..., H, W]",
             x.defined() ? x.describe().c_str() : "undefined");
    SD_CHECK(out_h > 0 && out_w > 0 && x.size(-1) > 0 && x.size(-2) > 0,
             "interpolate %s to %lldx%lld: sizes must be positive", x.describe().c_str(),
             (long long)out_w, (long long)out_h);
    const int64_t h = x.size(-2), w = x.size(-1), planes = x.numel() / (h * w);
    Shape shape = x.shape();
    shape[shape.size() - 2] = out_h;
    shape[shape.size() - 1] = out_w;
    if (h == out_h && w == out_w) return x.contiguous();
    const Tensor in = x.contiguous();
    Tensor out = Tensor::empty(shape);
    const auto ys = axis_taps(h, out_h, mode, antialias), xs = axis_taps(w, out_w, mode, antialias);
    const float* src = in.data<float>();
    float* dst = out.data<float>();
    parallel_for(planes * out_h, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const int64_t p = r / out_h, y = r % out_h;
            const float* plane = src + p * h * w;
            for (int64_t xo = 0; xo < out_w; ++xo) {
                double v = 0.0;
                for (const Tap& ty : ys[static_cast<size_t>(y)])
                    for (const Tap& tx : xs[static_cast<size_t>(xo)])
                        v += static_cast<double>(plane[ty.index * w + tx.index]) * tx.weight *
                             ty.weight;
                dst[r * out_w + xo] = static_cast<float>(v);
            }
        }
    });
    return out;
}

}  // namespace sd
