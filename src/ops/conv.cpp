// conv2d as an implicit GEMM on the engine of ops/cpu/gemm.h, one product per image:
//
//     out[o, p] = sum_k weight[o, k] * patch[k, p] + bias[o]
//
// with k = (c, kh, kw) and p = (oh, ow). The weight is the A operand (rows contiguous in k,
// any dtype); the patches are the B operand and are gathered from the input straight into
// the packed B panels, so no im2col buffer is ever built. A 1x1 convolution with stride 1
// and no padding reads the input as a plain strided matrix. Convolutions with few output
// channels take the direct path of conv_direct.cpp instead (no patch packing at all), and
// 3x3 ones that ask for it the Winograd path of conv_winograd.cpp.
#include "ops/conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "gpu/device_ops.h"
#include "ops/conv_direct.h"
#include "ops/conv_winograd.h"
#include "ops/cpu/gemm.h"
#include "ops/flop_counter.h"

namespace sd {
namespace {

struct ConvGeometry {
    const float* x;   // one image, [C, H, W] contiguous (before upsampling)
    int64_t c, h, w;  // h, w: as the kernel sees the input (doubled with up2)
    int64_t kh, kw;
    int64_t sh, sw, ph, pw;
    int64_t oh, ow;
    bool up2;  // read x upsampled 2x (nearest), stride 1
};

bool is_plain_float(DType d) {
    return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}

void check_conv(const Tensor& x, const Tensor& weight, const Tensor& bias,
                const Conv2dOptions& opt) {
    SD_CHECK(x.defined() && weight.defined(), "conv2d: undefined %s",
             x.defined() ? "weight" : "input");
    SD_CHECK(x.dtype() == DType::F32 && x.dim() == 4, "conv2d: input %s must be f32 [B, C, H, W]",
             x.describe().c_str());
    SD_CHECK(weight.dim() == 4 && weight.dtype() != DType::I32,
             "conv2d: weight %s must be [O, C, KH, KW] of a float or block-quant dtype",
             weight.describe().c_str());
    SD_CHECK(weight.size(1) == x.size(1),
             "conv2d: input %s has %lld channels, weight %s wants %lld", x.describe().c_str(),
             static_cast<long long>(x.size(1)), weight.describe().c_str(),
             static_cast<long long>(weight.size(1)));
    SD_CHECK(opt.stride_h >= 1 && opt.stride_w >= 1 && opt.pad_h >= 0 && opt.pad_w >= 0,
             "conv2d: stride (%d, %d) must be >= 1 and padding (%d, %d) >= 0", opt.stride_h,
             opt.stride_w, opt.pad_h, opt.pad_w);
    SD_CHECK(!opt.upsample2x || (opt.stride_h == 1 && opt.stride_w == 1),
             "conv2d: upsample2x needs stride 1, not (%d, %d)", opt.stride_h, opt.stride_w);
    const int up = opt.upsample2x ? 2 : 1;
    SD_CHECK(x.size(2) * up + 2 * opt.pad_h >= weight.size(2) &&
                 x.size(3) * up + 2 * opt.pad_w >= weight.size(3),
             "conv2d: input %s with padding (%d, %d) is smaller than the kernel of weight %s",
             x.describe().c_str(), opt.pad_h, opt.pad_w, weight.describe().c_str());
    if (bias.defined()) {
        SD_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0) && is_plain_float(bias.dtype()),
                 "conv2d: bias %s does not match weight %s (want f32/f16/bf16 [%lld])",
                 bias.describe().c_str(), weight.describe().c_str(),
                 static_cast<long long>(weight.size(0)));
    }
}

// Row (c, kh, kw) of the patch matrix for output pixels [p0, p0 + np), where p0 is output
// pixel (oh0, ow0): d[i] is the input value under kernel tap (kh, kw) of channel c for
// output pixel p0 + i, 0 in the padding.
void patch_row(const ConvGeometry& g, const cpu::GemmKernels& ks, int64_t c, int64_t kh, int64_t kw,
               int64_t oh0, int64_t ow0, int np, float* d) {
    const int64_t sw = g.up2 ? g.w / 2 : g.w;  // the stored row length
    const float* plane = g.x + c * (g.up2 ? g.h / 2 : g.h) * sw;
    int64_t oh = oh0, ow = ow0;
    for (int64_t i = 0; i < np; ow = 0, ++oh) {
        // The pixels of output row oh from column ow on.
        const int64_t seg = std::min<int64_t>(np - i, g.ow - ow);
        const int64_t ih = oh * g.sh - g.ph + kh;
        const int64_t iw0 = ow * g.sw - g.pw + kw;
        if (ih < 0 || ih >= g.h) {
            std::memset(d + i, 0, seg * sizeof(float));
        } else if (g.up2) {
            conv_detail::copy_upsampled(plane + (ih >> 1) * sw, sw, iw0, d + i, seg);
        } else if (g.sw == 1 && iw0 >= 0 && iw0 + seg <= g.w) {
            // Inside the row (most stretches of a large image): a plain copy, without the
            // per-call edge handling of copy_padded (measured 20% of a 3x3 conv at 512x512).
            std::memcpy(d + i, plane + ih * g.w + iw0, static_cast<size_t>(seg) * sizeof(float));
        } else {
            ks.copy_padded(plane + ih * g.w, g.w, iw0, g.sw, d + i, seg);
        }
        i += seg;
    }
}

// Packs patches[k0 .. k0 + kc, p0 .. p0 + np) as rows p: dst[k * R + i].
void pack_patches(const cpu::PanelSource& src, const cpu::GemmKernels& ks, int64_t p0, int np,
                  int64_t k0, int64_t kc, float* dst, int R) {
    const auto& g = *static_cast<const ConvGeometry*>(src.ctx);
    int64_t c = k0 / (g.kh * g.kw), kh = k0 / g.kw % g.kh, kw = k0 % g.kw;
    const int64_t oh0 = p0 / g.ow, ow0 = p0 % g.ow;  // once: a division costs as much as a copy
    for (int64_t k = 0; k < kc; ++k) {
        float* d = dst + k * R;
        patch_row(g, ks, c, kh, kw, oh0, ow0, np, d);
        std::fill(d + np, d + R, 0.0f);
        if (++kw == g.kw) {
            kw = 0;
            if (++kh == g.kh) {
                kh = 0;
                ++c;
            }
        }
    }
}

// The output size of conv2d on x (H, W doubled first with upsample2x).
std::pair<int64_t, int64_t> output_size(const Tensor& x, const Tensor& weight,
                                        const Conv2dOptions& opt) {
    const int up = opt.upsample2x ? 2 : 1;
    const int64_t oh = (x.size(2) * up + 2 * opt.pad_h - weight.size(2)) / opt.stride_h + 1;
    const int64_t ow = (x.size(3) * up + 2 * opt.pad_w - weight.size(3)) / opt.stride_w + 1;
    return {oh, ow};
}

// p += residual (when not null), then x < 0 -> x * slope (when leaky) over `n` values,
// split over the pool.
void finish_inplace(float* p, int64_t n, const float* residual, bool leaky, float slope) {
    parallel_for(n, 1 << 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float v = residual ? p[i] + residual[i] : p[i];
            p[i] = leaky && v < 0.0f ? v * slope : v;
        }
    });
}

// The product for every image of x into out (contiguous [B, O, OH, OW]), plus residual
// (null or laid out as out) before the LeakyReLU.
void run_conv(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options, float* out, const float* residual = nullptr) {
    const int up = options.upsample2x ? 2 : 1;
    const int64_t batch = x.size(0), channels = x.size(1), h = x.size(2) * up, w = x.size(3) * up;
    const int64_t out_ch = weight.size(0), kh = weight.size(2), kw = weight.size(3);
    const auto [oh, ow] = output_size(x, weight, options);
    const Tensor xs = x.contiguous();
    const Tensor ws = weight.contiguous();
    const std::vector<float> b = bias.defined() ? bias.to_vector() : std::vector<float>{};
    const int64_t k = channels * kh * kw, pixels = oh * ow;
    const bool pointwise = kh == 1 && kw == 1 && options.stride_h == 1 && options.stride_w == 1 &&
                           options.pad_h == 0 && options.pad_w == 0 && up == 1;

    count_flops(2.0 * static_cast<double>(batch) * static_cast<double>(pixels) *
                static_cast<double>(out_ch) * static_cast<double>(k));
    if (conv_detail::winograd_applies(xs, ws, options)) {
        conv_detail::conv2d_winograd(xs, ws, b.empty() ? nullptr : b.data(), options, out,
                                     residual);
        return;
    }
    if (conv_detail::direct_applies(xs, ws, options)) {
        conv_detail::conv2d_direct(xs, ws, b.empty() ? nullptr : b.data(), options, out, residual);
        return;
    }
    for (int64_t i = 0; i < batch; ++i) {
        ConvGeometry g{xs.numel() ? xs.data<float>() + i * channels * (h / up) * (w / up) : nullptr,
                       channels,
                       h,
                       w,
                       kh,
                       kw,
                       options.stride_h,
                       options.stride_w,
                       options.pad_h,
                       options.pad_w,
                       oh,
                       ow,
                       up == 2};
        cpu::GemmProblem pr;
        pr.m = out_ch;
        pr.n = pixels;
        pr.k = k;
        pr.a = cpu::row_source(ws.dtype(), ws.data_ptr(), k);
        if (pointwise) {
            pr.b = cpu::strided_source(g.x, 1, h * w);
        } else {
            pr.b.pack = pack_patches;
            pr.b.ctx = &g;
        }
        pr.c = out + i * out_ch * pixels;
        pr.ldc = pixels;
        pr.bias_m = b.empty() ? nullptr : b.data();
        cpu::gemm(pr);
    }
    if (options.leaky_relu || residual)
        finish_inplace(out, batch * out_ch * pixels, residual, options.leaky_relu,
                       options.negative_slope);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
    if (on_device::any({&x, &weight, &bias})) [[unlikely]]
        return on_device::conv2d(x, weight, bias, options);
    check_conv(x, weight, bias, options);
    const auto [oh, ow] = output_size(x, weight, options);
    Tensor out = Tensor::empty({x.size(0), weight.size(0), oh, ow});
    if (out.numel() > 0) run_conv(x, weight, bias, options, out.data<float>());
    return out;
}

void conv2d_into(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& options, const Tensor& out) {
    if (on_device::any({&x, &weight, &bias, &out})) [[unlikely]]
        return on_device::conv2d_into(x, weight, bias, options, out);
    check_conv(x, weight, bias, options);
    const auto [oh, ow] = output_size(x, weight, options);
    const Shape want{x.size(0), weight.size(0), oh, ow};
    SD_CHECK(
        out.defined() && out.dtype() == DType::F32 && out.shape() == want && out.is_contiguous(),
        "conv2d_into: output %s must be a contiguous f32 [%lld, %lld, %lld, %lld]",
        out.describe().c_str(), (long long)want[0], (long long)want[1], (long long)want[2],
        (long long)want[3]);
    // A strided input is copied before the product; a contiguous one is read in place.
    const bool overlap = out.storage() == x.storage() && x.is_contiguous() &&
                         x.offset() < out.offset() + out.numel() &&
                         out.offset() < x.offset() + x.numel();
    SD_CHECK(!overlap, "conv2d_into: the output %s overlaps the input %s", out.describe().c_str(),
             x.describe().c_str());
    if (out.numel() > 0) run_conv(x, weight, bias, options, out.data<float>());
}

Tensor conv2d_add(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Conv2dOptions& options, const Tensor& residual) {
    if (on_device::any({&x, &weight, &bias, &residual})) [[unlikely]]
        return on_device::conv2d_add(x, weight, bias, options, residual);
    check_conv(x, weight, bias, options);
    const auto [oh, ow] = output_size(x, weight, options);
    const Shape want{x.size(0), weight.size(0), oh, ow};
    SD_CHECK(residual.defined() && residual.dtype() == DType::F32 && residual.shape() == want,
             "conv2d_add: residual %s must be f32 [%lld, %lld, %lld, %lld]",
             residual.describe().c_str(), (long long)want[0], (long long)want[1],
             (long long)want[2], (long long)want[3]);
    const Tensor r = residual.contiguous();
    Tensor out = Tensor::empty(want);
    if (out.numel() > 0) run_conv(x, weight, bias, options, out.data<float>(), r.data<float>());
    return out;
}

}  // namespace sd
