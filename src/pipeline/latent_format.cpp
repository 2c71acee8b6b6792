#include "pipeline/latent_format.h"

#include <vector>

#include "base/error.h"
#include "ops/ops.h"

namespace sd {
namespace {

// [B, C, H, W] <-> [B, C*p*p, H/p, W/p]: pixel (i, j) of a patch goes to channel
// c*p*p + i*p + j. A plain copy loop (latents are small; shapes have at most 5 dims).
Tensor repatch(const Tensor& src, int64_t p, bool fold) {
    const Tensor in = src.dtype() == DType::F32 ? src.contiguous() : convert(src, DType::F32);
    const int64_t b = in.size(0), c = fold ? in.size(1) : in.size(1) / (p * p);
    const int64_t h = fold ? in.size(2) : in.size(2) * p, w = fold ? in.size(3) : in.size(3) * p;
    SD_CHECK(h % p == 0 && w % p == 0, "a %lldx%lld latent does not split into %lldx%lld patches",
             (long long)w, (long long)h, (long long)p, (long long)p);
    Tensor out = Tensor::empty(fold ? Shape{b, c * p * p, h / p, w / p} : Shape{b, c, h, w});
    const float* s = in.data<float>();
    float* d = out.data<float>();
    for (int64_t n = 0; n < b * c; ++n) {
        for (int64_t y = 0; y < h; ++y) {
            for (int64_t x = 0; x < w; ++x) {
                const int64_t plain = (n * h + y) * w + x;
                const int64_t patched =
                    ((n * p * p + (y % p) * p + x % p) * (h / p) + y / p) * (w / p) + x / p;
                if (fold)
                    d[patched] = s[plain];
                else
                    d[plain] = s[patched];
            }
        }
    }
    return out;
}

// [1, C, 1, 1] (a video's [1, C, 1, 1, 1] when `dims` is 5) of `values` times `factor`.
Tensor channel_tensor(std::span<const float> values, float factor, bool reciprocal, int dims) {
    std::vector<float> v(values.begin(), values.end());
    for (float& e : v) e = (reciprocal ? 1.0f / e : e) * factor;
    const auto c = static_cast<int64_t>(v.size());
    return Tensor::from_vector(dims == 5 ? Shape{1, c, 1, 1, 1} : Shape{1, c, 1, 1}, v);
}

// An image's latent [B, C, H, W], or a video's [1, C, T, H, W] (unpatched formats).
void check_channels(const LatentFormat& f, const Tensor& t, int64_t expected, const char* side) {
    SD_CHECK((t.dim() == 4 || (t.dim() == 5 && f.patch == 1)) && t.size(1) == expected,
             "a %s latent of shape %s does not fit this model's latent format (%lld channels)",
             side, t.shape().to_string().c_str(), (long long)expected);
    SD_CHECK(!f.per_channel() || (f.mean.size() == static_cast<size_t>(f.channels) &&
                                  f.std.size() == static_cast<size_t>(f.channels)),
             "latent format: %zu means and %zu stds for %lld channels", f.mean.size(), f.std.size(),
             (long long)f.channels);
}

}  // namespace

Tensor to_model_latent(const LatentFormat& f, const Tensor& z) {
    check_channels(f, z, f.codec_channels(), "codec");
    Tensor x = f.patch > 1 ? repatch(z, f.patch, /*fold=*/true) : z;
    if (f.per_channel()) {
        x = x - channel_tensor(f.mean, 1.0f, false, x.dim());
        return x * channel_tensor(f.std, f.scale, /*reciprocal=*/true, x.dim());
    }
    if (f.shift != 0.0f) x = add_scalar(x, -f.shift);
    return x * f.scale;
}

Tensor to_codec_latent(const LatentFormat& f, const Tensor& x) {
    check_channels(f, x, f.channels, "model");
    Tensor z;
    if (f.per_channel()) {
        z = x * channel_tensor(f.std, 1.0f / f.scale, false, x.dim()) +
            channel_tensor(f.mean, 1.0f, false, x.dim());
    } else {
        z = x * (1.0f / f.scale);
        if (f.shift != 0.0f) z = add_scalar(z, f.shift);
    }
    return f.patch > 1 ? repatch(z, f.patch, /*fold=*/false) : z;
}

}  // namespace sd
