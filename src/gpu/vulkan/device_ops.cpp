// gpu/device_ops.h on a Vulkan stream: each op checks its inputs, takes device buffers for its
// activations and the stream's constants for its weights, and records vulkan_ops' kernels.
#include "gpu/device_ops.h"

#include <cmath>
#include <mutex>
#include <set>
#include <string>

#include "base/error.h"
#include "base/log.h"
#include "gpu/device_tensor.h"
#include "gpu/vulkan/vulkan_ops.h"
#include "gpu/vulkan/vulkan_stream.h"
#include "ops/elementwise.h"
#include "ops/flop_counter.h"

namespace sd::on_device {
namespace {

using gpu::Stream;
using gpu::View4;

// Arith and Pointwise are the kernels' BinaryOp and UnaryOp, value for value.
static_assert(int(Arith::Div) == int(gpu::BinaryOp::Div));
static_assert(int(Pointwise::AddScalar) == int(gpu::UnaryOp::AddScalar) &&
              int(Pointwise::Clamp) == int(gpu::UnaryOp::Clamp));

// The stream of an op's device inputs: all of them on one stream.
Stream& stream_for(const char* op, std::initializer_list<const Tensor*> inputs) {
    Stream* stream = nullptr;
    for (const Tensor* t : inputs) {
        if (!gpu::on_device(*t)) continue;
        Stream& s = t->storage()->allocation()->stream();
        SD_CHECK(!stream || stream == &s, "%s: inputs on two devices or runs (%s and %s)", op,
                 stream ? stream->name().c_str() : "", s.name().c_str());
        stream = &s;
    }
    SD_CHECK(stream, "%s: no input on a device", op);
    stream->begin_op();
    return *stream;
}

void check_f32(const Tensor& t, const char* op, const char* what) {
    SD_CHECK(t.dtype() == DType::F32, "%s on a device: %s is %s, f32 expected", op, what,
             t.describe().c_str());
}

// t's dimensions with those of size 1 dropped and those contiguous with each other merged (a
// 5-d view of a packed tensor becomes 1-d).
void collapse(const Tensor& t, Shape& shape, Strides& strides) {
    for (int d = 0; d < t.dim(); ++d) {
        if (t.size(d) == 1) continue;
        if (shape.size() > 0 && strides[shape.size() - 1] == t.stride(d) * t.size(d)) {
            shape[shape.size() - 1] *= t.size(d);
            strides[strides.size() - 1] = t.stride(d);
            continue;
        }
        shape.push_back(t.size(d));
        strides.push_back(t.stride(d));
    }
}

// The same view with t's dimensions kept (for broadcasting against another shape).
View4 view_as_is(const Tensor& t) {
    return gpu::view4(t.shape(), t.strides(), t.offset());
}

// Copies src into dst (one shape, any strides, f32): one dispatch when the two views fit in 4
// dimensions once the dimensions contiguous in both are merged, else one a slice of the
// outermost dimension (a 5-d patchify permutation: one dispatch a row of patches).
void copy_view(Stream& s, const Tensor& src, const Tensor& dst, const char* op) {
    Shape shape;
    Strides from, to;
    for (int d = 0; d < src.dim(); ++d) {
        if (src.size(d) == 1) continue;
        const int n = shape.size();
        if (n > 0 && from[n - 1] == src.stride(d) * src.size(d) &&
            to[n - 1] == dst.stride(d) * dst.size(d)) {
            shape[n - 1] *= src.size(d);
            from[n - 1] = src.stride(d);
            to[n - 1] = dst.stride(d);
            continue;
        }
        shape.push_back(src.size(d));
        from.push_back(src.stride(d));
        to.push_back(dst.stride(d));
    }
    if (shape.size() > 4) {
        for (int64_t i = 0; i < src.size(0); ++i)
            copy_view(s, src.select(0, i), dst.select(0, i), op);
        return;
    }
    gpu::unary_into(s.recorder(), gpu::UnaryOp::Copy, s.buffer(src, op),
                    gpu::view4(shape, from, src.offset()), s.buffer(dst, op),
                    gpu::view4(shape, to, dst.offset()));
}

// A packed copy of a device tensor.
Tensor packed_copy(Stream& s, const Tensor& t, const char* op) {
    check_f32(t, op, "a strided input");
    Tensor out = s.empty(t.shape());
    copy_view(s, t, out, op);
    return out;
}

// A packed device tensor with t's values starting at offset 0: t itself, or a copy.
Tensor packed(Stream& s, const Tensor& t, const char* op) {
    s.buffer(t, op);
    if (t.is_contiguous() && t.offset() == 0) return t;
    return packed_copy(s, t, op);
}

// A host weight as the stream's constant, or a device tensor's buffer (a packed copy of a
// strided one, held until the op ends: FLUX's modulation rows as a norm's scale and shift).
const gpu::VulkanBuffer& weight_buffer(Stream& s, const Tensor& w, bool as_f32, const char* op) {
    if (!gpu::on_device(w)) return s.constant(w.contiguous(), as_f32);
    SD_CHECK(!as_f32 || w.dtype() == DType::F32, "%s on a device: %s must be f32", op,
             w.describe().c_str());
    if (w.is_contiguous() && w.offset() == 0) return s.buffer(w, op);
    const Tensor p = packed_copy(s, w, op);
    s.keep_for_op(p);
    return s.buffer(p, op);
}

const gpu::VulkanBuffer* optional_f32(Stream& s, const Tensor& t, const char* op) {
    return t.defined() ? &weight_buffer(s, t, true, op) : nullptr;
}

uint32_t u32(int64_t v) {
    return static_cast<uint32_t>(v);
}

}  // namespace

bool any(std::initializer_list<const Tensor*> inputs) {
    for (const Tensor* t : inputs)
        if (gpu::on_device(*t)) return true;
    return false;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    Stream& s = stream_for("linear", {&x, &weight, &bias});
    check_f32(x, "linear", "x");
    SD_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1),
             "linear: x %s and weight %s do not fit", x.describe().c_str(),
             weight.describe().c_str());
    const Tensor xp = packed(s, x, "linear");
    Shape out_shape = x.shape();
    out_shape[out_shape.size() - 1] = weight.size(0);
    Tensor y = s.empty(out_shape);
    gpu::LinearShape shape{u32(x.numel() / x.size(-1)), u32(weight.size(0)), u32(weight.size(1))};
    shape.weight = weight.dtype();
    const gpu::VulkanBuffer& w = weight_buffer(s, weight, false, "linear");
    count_flops(2.0 * shape.M * shape.N * shape.K);
    gpu::linear(s.recorder(), s.buffer(xp, "linear"), w, optional_f32(s, bias, "linear"),
                s.buffer(y, "linear"), shape);
    return y;
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
    Stream& s = stream_for("conv2d", {&x, &weight, &bias});
    check_f32(x, "conv2d", "x");
    SD_CHECK(x.dim() == 4 && weight.dim() == 4 && x.size(1) == weight.size(1),
             "conv2d: x %s and weight %s do not fit", x.describe().c_str(),
             weight.describe().c_str());
    const Tensor xp = packed(s, x, "conv2d");
    gpu::Conv2dShape shape{u32(x.size(0)),     u32(x.size(1)),      u32(x.size(2)),
                           u32(x.size(3)),     u32(weight.size(0)), u32(weight.size(2)),
                           u32(weight.size(3))};
    shape.stride_h = u32(options.stride_h);
    shape.stride_w = u32(options.stride_w);
    shape.pad_h = u32(options.pad_h);
    shape.pad_w = u32(options.pad_w);
    shape.upsample2x = options.upsample2x;
    shape.leaky_relu = options.leaky_relu;
    shape.negative_slope = options.negative_slope;
    shape.weight = weight.dtype();
    Tensor y = s.empty({x.size(0), weight.size(0), shape.out_h(), shape.out_w()});
    const gpu::VulkanBuffer& w = weight_buffer(s, weight, false, "conv2d");
    count_flops(2.0 * y.numel() * shape.channels * shape.kernel_h * shape.kernel_w);
    gpu::conv2d(s.recorder(), s.buffer(xp, "conv2d"), w, optional_f32(s, bias, "conv2d"),
                s.buffer(y, "conv2d"), shape);
    return y;
}

void conv2d_into(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& options, const Tensor& out) {
    on_device::copy_into(on_device::conv2d(x, weight, bias, options), out);
}

Tensor conv2d_add(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Conv2dOptions& options, const Tensor& residual) {
    Conv2dOptions plain = options;
    plain.leaky_relu = false;
    Tensor y = on_device::arith(Arith::Add, on_device::conv2d(x, weight, bias, plain), residual);
    if (!options.leaky_relu) return y;
    // LeakyReLU(y) = max(y, 0) + slope * min(y, 0)
    return on_device::arith(
        Arith::Add, on_device::pointwise(Pointwise::Clamp, y, 0.0f, INFINITY),
        on_device::pointwise(Pointwise::Scale,
                             on_device::pointwise(Pointwise::Clamp, y, -INFINITY, 0.0f),
                             options.negative_slope));
}

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  float eps, bool silu) {
    Stream& s = stream_for("group_norm", {&x, &weight, &bias});
    check_f32(x, "group_norm", "x");
    SD_CHECK(x.dim() >= 2 && groups > 0 && x.size(1) % groups == 0,
             "group_norm: %lld groups for %s", static_cast<long long>(groups),
             x.describe().c_str());
    const Tensor xp = packed(s, x, "group_norm");
    Tensor y = s.empty(x.shape());
    const int64_t spatial = x.numel() / (x.size(0) * x.size(1));
    gpu::group_norm(s.recorder(), s.buffer(xp, "group_norm"), s.buffer(y, "group_norm"),
                    u32(x.size(0)), u32(x.size(1)), u32(spatial), u32(groups),
                    optional_f32(s, weight, "group_norm"), optional_f32(s, bias, "group_norm"), eps,
                    silu);
    return y;
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
    Stream& s = stream_for("layer_norm", {&x, &weight, &bias});
    check_f32(x, "layer_norm", "x");
    const Tensor xp = packed(s, x, "layer_norm");
    Tensor y = s.empty(x.shape());
    gpu::layer_norm(s.recorder(), s.buffer(xp, "layer_norm"), s.buffer(y, "layer_norm"),
                    u32(x.numel() / x.size(-1)), u32(x.size(-1)),
                    optional_f32(s, weight, "layer_norm"), optional_f32(s, bias, "layer_norm"),
                    eps);
    return y;
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
    Stream& s = stream_for("rms_norm", {&x, &weight});
    check_f32(x, "rms_norm", "x");
    const Tensor xp = packed(s, x, "rms_norm");
    Tensor y = s.empty(x.shape());
    gpu::rms_norm(s.recorder(), s.buffer(xp, "rms_norm"), s.buffer(y, "rms_norm"),
                  u32(x.numel() / x.size(-1)), u32(x.size(-1)), optional_f32(s, weight, "rms_norm"),
                  eps);
    return y;
}

Tensor softmax(const Tensor& x, int dim) {
    if (x.wrap_dim(dim) != x.dim() - 1)
        return run_on_host(
            "softmax over a dimension other than the last", {x},
            [dim](const std::vector<Tensor>& in) { return sd::softmax(in[0], dim); });
    Stream& s = stream_for("softmax", {&x});
    check_f32(x, "softmax", "x");
    const Tensor xp = packed(s, x, "softmax");
    Tensor y = s.empty(x.shape());
    gpu::softmax(s.recorder(), s.buffer(xp, "softmax"), s.buffer(y, "softmax"),
                 u32(x.numel() / x.size(-1)), u32(x.size(-1)));
    return y;
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 const AttentionOptions& options) {
    Stream& s = stream_for("attention", {&q, &k, &v, &mask});
    for (const Tensor* t : {&q, &k, &v}) check_f32(*t, "attention", "q, k and v");
    SD_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && k.size(-1) == q.size(-1) &&
                 k.size(2) == v.size(2),
             "attention: q %s, k %s, v %s do not fit", q.describe().c_str(), k.describe().c_str(),
             v.describe().c_str());
    Tensor qr = q, kr = k;
    if (options.rope.defined()) {  // rotated copies: the device kernel has no fused RoPE
        const gpu::VulkanBuffer& table = weight_buffer(s, options.rope, true, "attention RoPE");
        for (Tensor* t : {&qr, &kr}) {
            Tensor rotated = s.empty(t->shape());
            gpu::rope(s.recorder(), s.buffer(*t, "attention"), view_as_is(*t), table,
                      u32(options.rope.size(0)), s.buffer(rotated, "attention"));
            *t = rotated;
        }
    }
    gpu::AttentionShape shape{u32(q.size(0)), u32(q.size(1)), u32(q.size(2)),
                              u32(k.size(2)), u32(q.size(3)), u32(v.size(3))};
    shape.scale = options.scale;
    shape.causal = options.causal;
    Tensor out = s.empty({q.size(0), q.size(1), q.size(2), v.size(3)});
    const gpu::VulkanBuffer* mask_buffer = nullptr;
    View4 mask_view;
    if (mask.defined()) {
        check_f32(mask, "attention", "the mask");
        const Tensor m = gpu::on_device(mask) ? mask : mask.contiguous();
        mask_buffer = gpu::on_device(m) ? &s.buffer(m, "attention") : &s.constant(m, true);
        const uint32_t target[4] = {shape.batch, shape.heads, shape.lq, shape.lk};
        mask_view = gpu::broadcast_view4(
            gpu::on_device(m) ? view_as_is(m) : gpu::contiguous_view4(m.shape()), target);
    }
    count_flops(2.0 * shape.batch * shape.heads * shape.lq * shape.lk * (shape.d + shape.dv));
    gpu::attention(s.recorder(), shape, s.buffer(qr, "attention"), view_as_is(qr),
                   s.buffer(kr, "attention"), view_as_is(kr), s.buffer(v, "attention"),
                   view_as_is(v), mask_buffer, mask_view, s.buffer(out, "attention"));
    return out;
}

Tensor arith(Arith op, const Tensor& a, const Tensor& b) {
    Stream& s = stream_for("arithmetic", {&a, &b});
    check_f32(a, "arithmetic", "a");
    check_f32(b, "arithmetic", "b");
    const Shape shape = broadcast_shapes(a.shape(), b.shape());
    Tensor y = s.empty(shape);
    const View4 yv = gpu::contiguous_view4(shape);
    auto operand = [&](const Tensor& t, View4& view) -> const gpu::VulkanBuffer& {
        if (gpu::on_device(t)) {
            view = gpu::broadcast_view4(view_as_is(t.expand(shape)), yv.shape);
            return s.buffer(t, "arithmetic");
        }
        const Tensor c = t.contiguous();  // a host constant (a learned embedding, a scale)
        view = gpu::broadcast_view4(view_as_is(c.expand(shape)), yv.shape);
        view.offset = 0;
        return s.constant(c, true);
    };
    View4 av, bv;
    const gpu::VulkanBuffer& ab = operand(a, av);
    const gpu::VulkanBuffer& bb = operand(b, bv);
    gpu::binary(s.recorder(), static_cast<gpu::BinaryOp>(op), ab, av, bb, bv,
                s.buffer(y, "arithmetic"));
    return y;
}

Tensor pointwise(Pointwise op, const Tensor& x, float a, float b) {
    Stream& s = stream_for("pointwise op", {&x});
    check_f32(x, "pointwise op", "x");
    Shape shape;
    Strides strides;
    collapse(x, shape, strides);
    if (shape.size() > 4) return pointwise(op, packed_copy(s, x, "pointwise op"), a, b);
    Tensor y = s.empty(x.shape());
    gpu::unary(s.recorder(), static_cast<gpu::UnaryOp>(op), s.buffer(x, "pointwise op"),
               gpu::view4(shape, strides, x.offset()), s.buffer(y, "pointwise op"), a, b);
    return y;
}

Tensor geglu(const Tensor& x) {
    const int64_t half = x.size(-1) / 2;
    return on_device::arith(Arith::Mul, x.narrow(-1, 0, half),
                            on_device::pointwise(Pointwise::Gelu, x.narrow(-1, half, half)));
}

void add_scaled_into(const Tensor& a, const Tensor& b, float s, const Tensor& out) {
    on_device::copy_into(
        on_device::arith(Arith::Add, a, on_device::pointwise(Pointwise::Scale, b, s)), out);
}

void copy_into(const Tensor& src, const Tensor& dst) {
    Stream& s = stream_for("copy_into", {&src, &dst});
    check_f32(src, "copy_into", "src");
    check_f32(dst, "copy_into", "dst");
    SD_CHECK(src.shape() == dst.shape(), "copy_into: %s into %s", src.describe().c_str(),
             dst.describe().c_str());
    copy_view(s, src, dst, "copy_into");
}

Tensor concat(const std::vector<Tensor>& parts, int dim) {
    SD_CHECK(!parts.empty(), "concat of no tensors");
    const Tensor& first = parts[0];
    const int d = first.wrap_dim(dim);
    Shape shape = first.shape();
    int64_t total = 0;
    for (const Tensor& p : parts) {
        SD_CHECK(p.dim() == first.dim(), "concat: %s and %s", first.describe().c_str(),
                 p.describe().c_str());
        total += p.size(d);
    }
    shape[d] = total;
    Stream& s = stream_for("concat", {&first});
    Tensor y = s.empty(shape);
    int64_t at = 0;
    for (const Tensor& p : parts) {
        const Tensor place = y.narrow(d, at, p.size(d));
        if (gpu::on_device(p))
            on_device::copy_into(p, place);
        else
            on_device::copy_into(gpu::to_device(p, s),
                                 place);  // a host part (rare): moved, counted
        at += p.size(d);
    }
    return y;
}

Tensor permute_copy(const Tensor& x, const std::vector<int>& order) {
    return on_device::contiguous(x.permute(order));
}

Tensor pad2d(const Tensor& x, int64_t left, int64_t right, int64_t top, int64_t bottom,
             float value) {
    Stream& s = stream_for("pad2d", {&x});
    check_f32(x, "pad2d", "x");
    SD_CHECK(x.dim() >= 2 && x.dim() <= 4, "pad2d of %s", x.describe().c_str());
    const int64_t H = x.size(-2), W = x.size(-1), oh = H + top + bottom, ow = W + left + right;
    SD_CHECK(oh > 0 && ow > 0, "pad2d of %s by (%lld, %lld, %lld, %lld) leaves nothing",
             x.describe().c_str(), (long long)left, (long long)right, (long long)top,
             (long long)bottom);
    Shape shape = x.shape();
    shape[shape.size() - 2] = oh;
    shape[shape.size() - 1] = ow;
    Tensor y = s.empty(shape);
    // The fill: one value, read through a view of stride 0 everywhere.
    gpu::View4 fill = gpu::contiguous_view4(shape);
    for (uint32_t& stride : fill.strides) stride = 0;
    gpu::unary_into(s.recorder(), gpu::UnaryOp::Copy, s.constant(Tensor::full({1}, value), true),
                    fill, s.buffer(y, "pad2d"), gpu::contiguous_view4(shape));
    // The kept part of x into its place (negative amounts crop).
    const int64_t sy = std::max<int64_t>(0, -top), sx = std::max<int64_t>(0, -left);
    const int64_t rows = H - sy - std::max<int64_t>(0, -bottom);
    const int64_t cols = W - sx - std::max<int64_t>(0, -right);
    if (rows > 0 && cols > 0)
        copy_view(s, x.narrow(-2, sy, rows).narrow(-1, sx, cols),
                  y.narrow(-2, std::max<int64_t>(0, top), rows)
                      .narrow(-1, std::max<int64_t>(0, left), cols),
                  "pad2d");
    return y;
}

Tensor upsample_nearest2x(const Tensor& x) {
    Stream& s = stream_for("upsample_nearest2x", {&x});
    check_f32(x, "upsample_nearest2x", "x");
    SD_CHECK(x.dim() >= 2, "upsample_nearest2x of %s", x.describe().c_str());
    const int64_t H = x.size(-2), W = x.size(-1);
    Shape shape = x.shape();
    shape[shape.size() - 2] = 2 * H;
    shape[shape.size() - 1] = 2 * W;
    Tensor y = s.empty(shape);
    // y viewed as [N, H, 2, W, 2] takes x (as [N, H, W]) repeated along the new dimensions.
    const int64_t n = x.numel() / (H * W);
    const Tensor src = packed(s, x, "upsample_nearest2x").view({n, H, 1, W, 1});
    copy_view(s, src.expand({n, H, 2, W, 2}), y.view({n, H, 2, W, 2}), "upsample_nearest2x");
    return y;
}

Tensor contiguous(const Tensor& x) {
    Stream& s = stream_for("contiguous", {&x});
    return x.is_contiguous() ? x : packed_copy(s, x, "contiguous");
}

Tensor clone(const Tensor& x) {
    return packed_copy(stream_for("clone", {&x}), x, "clone");
}

Tensor run_on_host(const char* op, const std::vector<Tensor>& inputs,
                   const std::function<Tensor(const std::vector<Tensor>&)>& compute) {
    std::shared_ptr<Stream> stream;
    std::vector<Tensor> host;
    for (const Tensor& t : inputs) {
        if (gpu::on_device(t) && !stream) stream = gpu::stream_of(t);
        host.push_back(gpu::to_host(t));
    }
    SD_CHECK(stream, "%s: no input on a device", op);
    {
        static std::mutex mutex;
        static std::set<std::string> warned;
        std::lock_guard<std::mutex> lock(mutex);
        if (warned.insert(op).second)
            SD_LOG_WARN(
                "%s has no kernel on %s: it runs on the CPU (its inputs and result "
                "cross between host and device)",
                op, stream->name().c_str());
    }
    stream->count_fallback();
    return gpu::to_device(compute(host), *stream);
}

}  // namespace sd::on_device
