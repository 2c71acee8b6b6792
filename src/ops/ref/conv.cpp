// Reference conv2d: the specification. Plain loops over logical indices (any strides),
// double accumulation, one thread.
#include <vector>

#include "base/error.h"
#include "ops/conv.h"
#include "ops/shape_ops.h"
#include "tensor/half.h"
#include "tensor/quant.h"

namespace sd::ref {
namespace {

float value_at(const Tensor& t, int64_t off) {
    const void* p = t.data_ptr();
    switch (t.dtype()) {
        case DType::F32:
            return static_cast<const float*>(p)[off];
        case DType::F16:
            return f16_to_f32(static_cast<const uint16_t*>(p)[off]);
        case DType::BF16:
            return bf16_to_f32(static_cast<const uint16_t*>(p)[off]);
        default:
            fail("ref: unexpected dtype %s", dtype_name(t.dtype()));
    }
}

// The weight as f32 in [O, C, KH, KW] row-major order; block-quant rows (the KW values of
// one (o, c, kh)) are dequantized with ref::dequantize_row.
std::vector<float> weight_values(const Tensor& w) {
    const int64_t o = w.size(0), c = w.size(1), kh = w.size(2), kw = w.size(3);
    std::vector<float> v(static_cast<size_t>(w.numel()));
    for (int64_t i = 0; i < o; ++i) {
        for (int64_t j = 0; j < c; ++j) {
            for (int64_t y = 0; y < kh; ++y) {
                const int64_t base = i * w.stride(0) + j * w.stride(1) + y * w.stride(2);
                float* dst = v.data() + ((i * c + j) * kh + y) * kw;
                if (is_quantized(w.dtype())) {
                    const auto* p = static_cast<const uint8_t*>(w.data_ptr());
                    ref::dequantize_row(w.dtype(), p + row_bytes(w.dtype(), base), dst, kw);
                } else {
                    for (int64_t x = 0; x < kw; ++x) dst[x] = value_at(w, base + x * w.stride(3));
                }
            }
        }
    }
    return v;
}

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& opt) {
    SD_CHECK(x_in.defined() && weight.defined(), "conv2d: undefined input or weight");
    SD_CHECK(!opt.upsample2x || (opt.stride_h == 1 && opt.stride_w == 1),
             "conv2d: upsample2x needs stride 1, not (%d, %d)", opt.stride_h, opt.stride_w);
    const Tensor x = opt.upsample2x ? ref::upsample_nearest2x(x_in) : x_in;
    SD_CHECK(x.dtype() == DType::F32 && x.dim() == 4 && weight.dim() == 4 &&
                 weight.dtype() != DType::I32 && weight.size(1) == x.size(1),
             "conv2d: input %s and weight %s do not match (want f32 [B, C, H, W], [O, C, KH, KW])",
             x.describe().c_str(), weight.describe().c_str());
    SD_CHECK(opt.stride_h >= 1 && opt.stride_w >= 1 && opt.pad_h >= 0 && opt.pad_w >= 0,
             "conv2d: bad stride (%d, %d) or padding (%d, %d)", opt.stride_h, opt.stride_w,
             opt.pad_h, opt.pad_w);
    const int64_t nb = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    const int64_t o = weight.size(0), kh = weight.size(2), kw = weight.size(3);
    SD_CHECK(h + 2 * opt.pad_h >= kh && w + 2 * opt.pad_w >= kw,
             "conv2d: input %s is smaller than the kernel of %s", x.describe().c_str(),
             weight.describe().c_str());
    if (bias.defined()) {
        SD_CHECK(bias.dim() == 1 && bias.size(0) == o &&
                     (bias.dtype() == DType::F32 || bias.dtype() == DType::F16 ||
                      bias.dtype() == DType::BF16),
                 "conv2d: bias %s does not match weight %s", bias.describe().c_str(),
                 weight.describe().c_str());
    }
    const int64_t oh = (h + 2 * opt.pad_h - kh) / opt.stride_h + 1;
    const int64_t ow = (w + 2 * opt.pad_w - kw) / opt.stride_w + 1;
    Tensor out = Tensor::empty({nb, o, oh, ow});
    if (out.numel() == 0) return out;
    const std::vector<float> wv = weight_values(weight);
    const float* xp = x.numel() ? x.data<float>() : nullptr;
    float* op = out.data<float>();
    for (int64_t b = 0; b < nb; ++b) {
        for (int64_t f = 0; f < o; ++f) {
            const double bv = bias.defined() ? value_at(bias, f * bias.stride(0)) : 0.0;
            for (int64_t y = 0; y < oh; ++y) {
                for (int64_t z = 0; z < ow; ++z) {
                    double acc = 0.0;
                    for (int64_t ci = 0; ci < c; ++ci) {
                        for (int64_t dy = 0; dy < kh; ++dy) {
                            const int64_t iy = y * opt.stride_h - opt.pad_h + dy;
                            if (iy < 0 || iy >= h) continue;
                            for (int64_t dz = 0; dz < kw; ++dz) {
                                const int64_t iz = z * opt.stride_w - opt.pad_w + dz;
                                if (iz < 0 || iz >= w) continue;
                                const float xv = xp[b * x.stride(0) + ci * x.stride(1) +
                                                    iy * x.stride(2) + iz * x.stride(3)];
                                acc += static_cast<double>(xv) *
                                       wv[static_cast<size_t>(((f * c + ci) * kh + dy) * kw + dz)];
                            }
                        }
                    }
                    float v = static_cast<float>(acc + bv);
                    if (opt.leaky_relu && v < 0.0f) v *= opt.negative_slope;
                    op[((b * o + f) * oh + y) * ow + z] = v;
                }
            }
        }
    }
    return out;
}

}  // namespace sd::ref
