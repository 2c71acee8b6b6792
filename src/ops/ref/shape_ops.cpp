// Reference shape ops: every output element computed from its logical index.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/cpu/strided_iter.h"
#include "ops/shape_ops.h"

namespace sd::ref {
namespace {

void check_image(const Tensor& x, const char* op) {
    cpu::require_f32(x, op, "x");
    SD_CHECK(x.dim() >= 2, "%s: x %s must be [..., H, W]", op, x.describe().c_str());
}

// Shape of x with its last two dimensions replaced.
Shape with_hw(const Tensor& x, int64_t h, int64_t w) {
    Shape s = x.shape();
    s[s.size() - 2] = h;
    s[s.size() - 1] = w;
    return s;
}

}  // namespace

Tensor concat(const std::vector<Tensor>& tensors, int dim) {
    SD_CHECK(!tensors.empty(), "concat: no tensors");
    const Tensor& first = tensors[0];
    SD_CHECK(first.defined() && !is_quantized(first.dtype()), "concat: %s is not a plain tensor",
             first.describe().c_str());
    const int d = first.wrap_dim(dim);
    Shape shape = first.shape();
    shape[d] = 0;
    for (const Tensor& t : tensors) {
        SD_CHECK(t.defined() && t.dtype() == first.dtype() && t.dim() == first.dim(),
                 "concat: %s does not match %s", t.describe().c_str(), first.describe().c_str());
        for (int j = 0; j < t.dim(); ++j) {
            SD_CHECK(j == d || t.size(j) == first.size(j), "concat along %d: %s does not match %s",
                     d, t.describe().c_str(), first.describe().c_str());
        }
        shape[d] += t.size(d);
    }
    Tensor out = Tensor::empty(shape, first.dtype());
    const size_t es = dtype_info(first.dtype()).type_size;
    auto* dst = static_cast<uint8_t*>(out.data_ptr());
    int64_t flat = 0;
    // Output in row-major order: for each index before d, each tensor's slab in turn.
    int64_t outer = 1;
    for (int j = 0; j < d; ++j) outer *= shape[j];
    for (int64_t o = 0; o < outer; ++o) {
        for (const Tensor& t : tensors) {
            const int64_t slab = t.numel() / std::max<int64_t>(outer, 1);
            const auto* src = static_cast<const uint8_t*>(t.data_ptr());
            for (int64_t i = 0; i < slab; ++i, ++flat) {
                const int64_t off = cpu::strided_offset(t.shape(), t.strides(), o * slab + i);
                std::memcpy(dst + flat * es, src + off * static_cast<int64_t>(es), es);
            }
        }
    }
    return out;
}

Tensor upsample_nearest2x(const Tensor& x) {
    check_image(x, "upsample_nearest2x");
    const int64_t h = x.size(-2), w = x.size(-1);
    const std::vector<float> v = x.to_vector();
    const Shape shape = with_hw(x, 2 * h, 2 * w);
    std::vector<float> out(static_cast<size_t>(shape.numel()));
    for (size_t k = 0; k < out.size(); ++k) {
        const int64_t j = k % (2 * w), i = k / (2 * w) % (2 * h), plane = k / (4 * h * w);
        out[k] = v[(plane * h + i / 2) * w + j / 2];
    }
    return Tensor::from_vector(shape, out);
}

Tensor pad2d(const Tensor& x, int64_t left, int64_t right, int64_t top, int64_t bottom,
             float value) {
    check_image(x, "pad2d");
    const int64_t h = x.size(-2), w = x.size(-1);
    const int64_t ho = h + top + bottom, wo = w + left + right;
    SD_CHECK(ho >= 0 && wo >= 0, "pad2d of %s: negative output size", x.describe().c_str());
    const std::vector<float> v = x.to_vector();
    const Shape shape = with_hw(x, ho, wo);
    std::vector<float> out(static_cast<size_t>(shape.numel()));
    for (size_t k = 0; k < out.size(); ++k) {
        const int64_t j = k % wo - left, i = k / wo % ho - top, plane = k / (wo * ho);
        const bool inside = i >= 0 && i < h && j >= 0 && j < w;
        out[k] = inside ? v[(plane * h + i) * w + j] : value;
    }
    return Tensor::from_vector(shape, out);
}

Tensor timestep_embedding(const Tensor& timesteps, int64_t dim, float max_period,
                          bool flip_sin_to_cos) {
    cpu::require_f32(timesteps, "timestep_embedding", "timesteps");
    SD_CHECK(timesteps.dim() == 1, "timestep_embedding: timesteps %s must be [N]",
             timesteps.describe().c_str());
    SD_CHECK(dim > 0, "timestep_embedding: dim %lld must be positive", static_cast<long long>(dim));
    const int64_t n = timesteps.size(0), half = dim / 2;
    const std::vector<float> t = timesteps.to_vector();
    std::vector<float> out(static_cast<size_t>(n * dim), 0.0f);
    const float c = static_cast<float>(-std::log(static_cast<double>(max_period)));
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t i = 0; i < half; ++i) {
            // The f32 roundings of torch's expression, then cos / sin of that f32 argument.
            const float e = c * static_cast<float>(i) / static_cast<float>(half);
            const float freq = static_cast<float>(std::exp(static_cast<double>(e)));
            const double arg = static_cast<float>(t[r] * freq);
            const float cv = static_cast<float>(std::cos(arg)),
                        sv = static_cast<float>(std::sin(arg));
            out[r * dim + i] = flip_sin_to_cos ? cv : sv;
            out[r * dim + half + i] = flip_sin_to_cos ? sv : cv;
        }
    }
    return Tensor::from_vector({n, dim}, out);
}

}  // namespace sd::ref
