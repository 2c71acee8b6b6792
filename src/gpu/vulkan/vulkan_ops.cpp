#include "gpu/vulkan/vulkan_ops.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "gpu/vulkan/vulkan_shaders.h"

namespace sd::gpu {
namespace {

// Bytes a strided [rows, cols] f32 matrix spans.
uint64_t span_bytes(uint32_t rows, uint32_t cols, uint32_t stride) {
    if (rows == 0 || cols == 0) return 0;
    return (uint64_t(rows - 1) * stride + cols) * sizeof(float);
}

void check_fits(const VulkanBuffer& b, uint64_t bytes, const char* what) {
    SD_CHECK(bytes <= b.size(), "Vulkan linear / conv2d: %s needs %llu bytes, its buffer has %zu",
             what, static_cast<unsigned long long>(bytes), b.size());
}

// The GEMM shader of a weight dtype for rows of K values, or an error naming why not.
const ShaderSpec& gemm_shader(const ShaderSpec* spec, const char* op, DType weight, uint64_t k) {
    SD_CHECK(spec,
             "Vulkan %s: no shader for %s weights (f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K "
             "have one)",
             op, dtype_name(weight));
    SD_CHECK(k % block_size(weight) == 0,
             "Vulkan %s: K = %llu is not a whole number of %s blocks of %lld", op,
             static_cast<unsigned long long>(k), dtype_name(weight),
             static_cast<long long>(block_size(weight)));
    return *spec;
}

// The workgroup grid covering an M x N output with the kernel's tiles: x, w, bias (or w, not
// read, where there is none) and y bound (and w again as the lanes shaders' 16-byte texels).
// The lanes shaders take row blocks past the y limit in z.
void dispatch_gemm(CommandRecorder& rec, const ShaderSpec& spec, shaders::Blocking blocking,
                   const VulkanBuffer& x, const VulkanBuffer& w, const VulkanBuffer* bias,
                   VulkanBuffer& y, const void* params, uint32_t params_bytes, uint64_t m,
                   uint32_t n) {
    const shaders::GemmTile tile = shaders::gemm_tile(blocking);
    const uint64_t blocks = (m + tile.rows - 1) / tile.rows;
    const uint32_t* limit = rec.device().limits().maxComputeWorkGroupCount;
    const bool lanes = blocking == shaders::Blocking::Lanes;
    const uint64_t gy = lanes ? std::min<uint64_t>(blocks, limit[1]) : blocks;
    const uint64_t gz = (blocks + gy - 1) / gy;
    SD_CHECK(gy <= limit[1] && gz <= limit[2],
             "Vulkan linear / conv2d: %llu rows need %llu workgroups, %s allows %u",
             static_cast<unsigned long long>(m), static_cast<unsigned long long>(blocks),
             rec.device().label().c_str(), lanes ? limit[1] * limit[2] : limit[1]);
    const VulkanBuffer& b = bias ? *bias : w;
    const uint32_t gx = (n + tile.cols - 1) / tile.cols;
    if (lanes)
        rec.dispatch(rec.device().kernel(spec), {&x, &w, &b, &y, &w}, params, params_bytes, gx,
                     uint32_t(gy), uint32_t(gz));
    else
        rec.dispatch(rec.device().kernel(spec), {&x, &w, &b, &y}, params, params_bytes, gx,
                     uint32_t(gy));
}

}  // namespace

shaders::Blocking device_blocking(const VulkanDevice& device) {
    return device.cpu() && device.subgroup_size() >= 8 ? shaders::Blocking::Lanes
                                                       : shaders::Blocking::Tiled;
}

shaders::Blocking blocking_for(const VulkanDevice& device, std::optional<shaders::Blocking> asked) {
    if (!asked) return device_blocking(device);
    SD_CHECK(*asked != shaders::Blocking::Lanes || device.subgroup_size() >= 8,
             "Vulkan: the lanes shaders need subgroups of 8 lanes with shuffles, %s has %u",
             device.label().c_str(), device.subgroup_size());
    return *asked;
}

void linear(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
            const VulkanBuffer* bias, VulkanBuffer& y, LinearShape s) {
    const shaders::Blocking blocking = blocking_for(rec.device(), s.blocking);
    const ShaderSpec& spec =
        gemm_shader(shaders::linear(s.weight, blocking), "linear", s.weight, s.K);
    if (s.x_stride == 0) s.x_stride = s.K;
    if (s.y_stride == 0) s.y_stride = s.N;
    SD_CHECK(s.x_stride >= s.K && s.y_stride >= s.N,
             "Vulkan linear: row strides %u / %u below K = %u / N = %u", s.x_stride, s.y_stride,
             s.K, s.N);
    const uint64_t w_row_bytes = row_bytes(s.weight, s.K);
    // The shaders address the weight in 32-bit byte offsets, x and y in 32-bit float indices.
    SD_CHECK(w_row_bytes * s.N <= UINT32_MAX && uint64_t(s.M) * s.x_stride <= UINT32_MAX &&
                 uint64_t(s.M) * s.y_stride <= UINT32_MAX,
             "Vulkan linear: %u x %u x %u is beyond the shader's 32-bit addressing", s.M, s.N, s.K);
    check_fits(x, span_bytes(s.M, s.K, s.x_stride), "x");
    check_fits(w, w_row_bytes * s.N, "the weight");
    if (bias) check_fits(*bias, uint64_t(s.N) * sizeof(float), "the bias");
    check_fits(y, span_bytes(s.M, s.N, s.y_stride), "y");
    const shaders::LinearParams params{
        s.M, s.N, s.K, s.x_stride, s.y_stride, bias ? 1u : 0u, static_cast<uint32_t>(w_row_bytes)};
    dispatch_gemm(rec, spec, blocking, x, w, bias, y, &params, sizeof(params), s.M, s.N);
}

uint32_t Conv2dShape::out_h() const {
    const int64_t in = int64_t(height) * (upsample2x ? 2 : 1) + 2 * int64_t(pad_h) - kernel_h;
    return in < 0 || stride_h == 0 ? 0 : uint32_t(in / stride_h + 1);
}

uint32_t Conv2dShape::out_w() const {
    const int64_t in = int64_t(width) * (upsample2x ? 2 : 1) + 2 * int64_t(pad_w) - kernel_w;
    return in < 0 || stride_w == 0 ? 0 : uint32_t(in / stride_w + 1);
}

void conv2d(CommandRecorder& rec, const VulkanBuffer& x, const VulkanBuffer& w,
            const VulkanBuffer* bias, VulkanBuffer& y, const Conv2dShape& s) {
    const uint64_t k = uint64_t(s.channels) * s.kernel_h * s.kernel_w;
    const shaders::Blocking blocking = blocking_for(rec.device(), s.blocking);
    const ShaderSpec& spec =
        gemm_shader(shaders::conv2d(s.weight, blocking), "conv2d", s.weight, k);
    SD_CHECK(s.stride_h > 0 && s.stride_w > 0 && s.kernel_h > 0 && s.kernel_w > 0,
             "Vulkan conv2d: a kernel %u x %u with stride %u x %u", s.kernel_h, s.kernel_w,
             s.stride_h, s.stride_w);
    SD_CHECK(!s.upsample2x || (s.stride_h == 1 && s.stride_w == 1),
             "Vulkan conv2d: the 2x upsampled read takes stride 1, not %u x %u", s.stride_h,
             s.stride_w);
    const uint32_t oh = s.out_h(), ow = s.out_w();
    SD_CHECK(oh > 0 && ow > 0, "Vulkan conv2d: a %u x %u kernel does not fit a %u x %u input",
             s.kernel_h, s.kernel_w, s.height, s.width);
    const uint64_t m = uint64_t(s.batch) * oh * ow;
    const uint64_t x_floats = uint64_t(s.batch) * s.channels * s.height * s.width;
    const uint64_t y_floats = m * s.out_channels;
    const uint64_t w_row_bytes = row_bytes(s.weight, int64_t(k));
    SD_CHECK(w_row_bytes * s.out_channels <= UINT32_MAX && x_floats <= UINT32_MAX &&
                 y_floats <= UINT32_MAX,
             "Vulkan conv2d: [%u, %u, %u, %u] by %u x %u to %u channels is beyond the shader's "
             "32-bit addressing",
             s.batch, s.channels, s.height, s.width, s.kernel_h, s.kernel_w, s.out_channels);
    check_fits(x, x_floats * sizeof(float), "x");
    check_fits(w, w_row_bytes * s.out_channels, "the weight");
    if (bias) check_fits(*bias, uint64_t(s.out_channels) * sizeof(float), "the bias");
    check_fits(y, y_floats * sizeof(float), "y");
    if (m == 0 || s.out_channels == 0) return;
    shaders::Conv2dParams params{};
    params.M = uint32_t(m);
    params.N = s.out_channels;
    params.K = uint32_t(k);
    params.has_bias = bias ? 1 : 0;
    params.w_row_bytes = uint32_t(w_row_bytes);
    params.C = s.channels;
    params.H = s.height;
    params.W = s.width;
    params.OH = oh;
    params.OW = ow;
    params.KH = s.kernel_h;
    params.KW = s.kernel_w;
    params.stride_h = s.stride_h;
    params.stride_w = s.stride_w;
    params.pad_h = s.pad_h;
    params.pad_w = s.pad_w;
    params.upsample2x = s.upsample2x ? 1 : 0;
    params.leaky_relu = s.leaky_relu ? 1 : 0;
    params.negative_slope = s.negative_slope;
    dispatch_gemm(rec, spec, blocking, x, w, bias, y, &params, sizeof(params), m, s.out_channels);
}

namespace {

uint32_t to_u32(int64_t v, const char* what) {
    SD_CHECK(v >= 0 && v <= int64_t(UINT32_MAX), "Vulkan ops: %s %lld is beyond 32 bits", what,
             static_cast<long long>(v));
    return static_cast<uint32_t>(v);
}

// Bytes up to and including a view's last element.
uint64_t view_bytes(const View4& v) {
    if (v.numel() == 0) return 0;
    uint64_t last = v.offset;
    for (int d = 0; d < 4; ++d) last += uint64_t(v.shape[d] - 1) * v.strides[d];
    return (last + 1) * sizeof(float);
}

void check_view(const VulkanBuffer& b, const View4& v, const char* op, const char* what) {
    SD_CHECK(view_bytes(v) <= b.size(), "Vulkan %s: %s reaches byte %llu of a %zu-byte buffer", op,
             what, static_cast<unsigned long long>(view_bytes(v)), b.size());
}

void check_floats(const VulkanBuffer& b, uint64_t count, const char* op, const char* what) {
    SD_CHECK(count * sizeof(float) <= b.size(),
             "Vulkan %s: %s needs %llu floats, its buffer has %zu bytes", op, what,
             static_cast<unsigned long long>(count), b.size());
}

// Workgroups for `units` work units: at most 65535 along x, the rest in rows along y.
void grid(uint64_t units, uint32_t& gx, uint32_t& gy) {
    gx = static_cast<uint32_t>(std::min<uint64_t>(units, 65535));
    gy = gx ? static_cast<uint32_t>((units + gx - 1) / gx) : 0;
}

// One invocation an element, in workgroups of 256.
template <class Params>
void dispatch_pointwise(CommandRecorder& rec, const ShaderSpec& spec,
                        std::initializer_list<const VulkanBuffer*> buffers, const Params& params,
                        uint64_t count) {
    uint32_t gx = 0, gy = 0;
    grid((count + 255) / 256, gx, gy);
    rec.dispatch(rec.device().kernel(spec), buffers, &params, sizeof(params), gx, gy);
}

void run_norm(CommandRecorder& rec, const char* op, const VulkanBuffer& x, VulkanBuffer& y,
              const shaders::NormParams& params, uint32_t channels, const VulkanBuffer* weight,
              const VulkanBuffer* bias) {
    const uint64_t count = uint64_t(params.rows) * params.row_len;
    check_floats(x, count, op, "x");
    check_floats(y, count, op, "y");
    if (weight) check_floats(*weight, channels, op, "the weight");
    if (bias) check_floats(*bias, channels, op, "the bias");
    uint32_t gx = 0, gy = 0;
    grid(params.rows, gx, gy);
    if (count == 0) return;
    // Absent parameters are bound to x, never read.
    rec.dispatch(rec.device().kernel(shaders::norm()),
                 {&x, weight ? weight : &x, bias ? bias : &x, &y}, &params, sizeof(params), gx, gy);
}

}  // namespace

uint64_t View4::numel() const {
    return uint64_t(shape[0]) * shape[1] * shape[2] * shape[3];
}

View4 view4(const Shape& shape, const Strides& strides, int64_t offset) {
    SD_CHECK(shape.size() <= 4, "Vulkan ops: %d dimensions, at most 4", shape.size());
    View4 v;
    const int lead = 4 - shape.size();
    for (int d = 0; d < shape.size(); ++d) {
        v.shape[lead + d] = to_u32(shape[d], "a size");
        v.strides[lead + d] = to_u32(strides[d], "a stride");
    }
    v.offset = to_u32(offset, "an offset");
    return v;
}

View4 contiguous_view4(const Shape& shape) {
    return view4(shape, contiguous_strides(shape));
}

View4 broadcast_view4(const View4& v, const uint32_t (&shape)[4]) {
    View4 out = v;
    for (int d = 0; d < 4; ++d) {
        if (v.shape[d] == shape[d]) continue;
        SD_CHECK(v.shape[d] == 1,
                 "Vulkan ops: [%u, %u, %u, %u] does not broadcast to [%u, %u, %u, %u]", v.shape[0],
                 v.shape[1], v.shape[2], v.shape[3], shape[0], shape[1], shape[2], shape[3]);
        out.shape[d] = shape[d];
        out.strides[d] = 0;
    }
    return out;
}

void unary(CommandRecorder& rec, UnaryOp op, const VulkanBuffer& x, const View4& xv,
           VulkanBuffer& y, float a, float b) {
    const View4 yv = contiguous_view4({xv.shape[0], xv.shape[1], xv.shape[2], xv.shape[3]});
    unary_into(rec, op, x, xv, y, yv, a, b);
}

void unary_into(CommandRecorder& rec, UnaryOp op, const VulkanBuffer& x, const View4& xv,
                VulkanBuffer& y, const View4& yv, float a, float b) {
    for (int d = 0; d < 4; ++d)
        SD_CHECK(xv.shape[d] == yv.shape[d],
                 "Vulkan unary: x is [%u, %u, %u, %u], its place in y [%u, %u, %u, %u]",
                 xv.shape[0], xv.shape[1], xv.shape[2], xv.shape[3], yv.shape[0], yv.shape[1],
                 yv.shape[2], yv.shape[3]);
    const uint64_t count = xv.numel();
    check_view(x, xv, "unary", "x");
    check_view(y, yv, "unary", "y");
    shaders::UnaryParams params{};
    for (int d = 0; d < 4; ++d) {
        params.shape[d] = xv.shape[d];
        params.strides[d] = xv.strides[d];
        params.y_strides[d] = yv.strides[d];
    }
    params.offset = xv.offset;
    params.y_offset = yv.offset;
    params.count = to_u32(int64_t(count), "an element count");
    params.op = static_cast<uint32_t>(op);
    params.a = a;
    params.b = b;
    dispatch_pointwise(rec, shaders::unary(), {&x, &y}, params, count);
}

void concat(CommandRecorder& rec, const std::vector<ConcatPart>& parts, int dim, VulkanBuffer& y) {
    SD_CHECK(!parts.empty() && dim >= 0 && dim < 4, "Vulkan concat: %zu parts along dim %d",
             parts.size(), dim);
    View4 whole = parts[0].view;
    whole.shape[dim] = 0;
    for (const ConcatPart& part : parts) {
        for (int d = 0; d < 4; ++d)
            SD_CHECK(d == dim || part.view.shape[d] == parts[0].view.shape[d],
                     "Vulkan concat: parts differ in dim %d (%u, %u) besides dim %d", d,
                     part.view.shape[d], parts[0].view.shape[d], dim);
        whole.shape[dim] += part.view.shape[dim];
    }
    const View4 out =
        contiguous_view4({whole.shape[0], whole.shape[1], whole.shape[2], whole.shape[3]});
    uint32_t at = 0;
    for (const ConcatPart& part : parts) {
        View4 place = out;
        std::copy(std::begin(part.view.shape), std::end(part.view.shape), place.shape);
        place.offset = at * out.strides[dim];
        unary_into(rec, UnaryOp::Copy, *part.buffer, part.view, y, place);
        at += part.view.shape[dim];
    }
}

void rope(CommandRecorder& rec, const VulkanBuffer& x, const View4& xv, const VulkanBuffer& table,
          uint32_t table_rows, VulkanBuffer& y) {
    SD_CHECK(xv.shape[3] % 2 == 0, "Vulkan rope: rows of %u values, not pairs", xv.shape[3]);
    SD_CHECK(table_rows >= xv.shape[2], "Vulkan rope: a table of %u positions for %u", table_rows,
             xv.shape[2]);
    check_view(x, xv, "rope", "x");
    check_floats(table, uint64_t(table_rows) * xv.shape[3], "rope", "the table");
    check_floats(y, xv.numel(), "rope", "y");
    shaders::RopeParams params{};
    for (int d = 0; d < 4; ++d) {
        params.shape[d] = d == 3 ? xv.shape[3] / 2 : xv.shape[d];
        params.strides[d] = xv.strides[d];
    }
    params.offset = xv.offset;
    params.count = to_u32(int64_t(xv.numel() / 2), "a pair count");
    dispatch_pointwise(rec, shaders::rope(), {&x, &table, &y}, params, params.count);
}

void binary(CommandRecorder& rec, BinaryOp op, const VulkanBuffer& a, const View4& av,
            const VulkanBuffer& b, const View4& bv, VulkanBuffer& y) {
    for (int d = 0; d < 4; ++d)
        SD_CHECK(av.shape[d] == bv.shape[d],
                 "Vulkan binary: the views' shapes differ in dim %d "
                 "(%u, %u): broadcast them first",
                 d, av.shape[d], bv.shape[d]);
    const uint64_t count = av.numel();
    check_view(a, av, "binary", "a");
    check_view(b, bv, "binary", "b");
    check_floats(y, count, "binary", "y");
    shaders::BinaryParams params{};
    for (int d = 0; d < 4; ++d) {
        params.shape[d] = av.shape[d];
        params.a_strides[d] = av.strides[d];
        params.b_strides[d] = bv.strides[d];
    }
    params.a_offset = av.offset;
    params.b_offset = bv.offset;
    params.count = to_u32(int64_t(count), "an element count");
    params.op = static_cast<uint32_t>(op);
    dispatch_pointwise(rec, shaders::binary(), {&a, &b, &y}, params, count);
}

void group_norm(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t batch,
                uint32_t channels, uint32_t spatial, uint32_t groups, const VulkanBuffer* weight,
                const VulkanBuffer* bias, float eps, bool silu) {
    SD_CHECK(groups > 0 && channels % groups == 0 && spatial > 0,
             "Vulkan group_norm: %u groups do not divide %u channels (of %u elements)", groups,
             channels, spatial);
    const uint64_t row_len = uint64_t(channels / groups) * spatial;
    const shaders::NormParams params{to_u32(int64_t(batch) * groups, "a row count"),
                                     to_u32(int64_t(row_len), "a row length"),
                                     spatial,
                                     groups,
                                     0,
                                     eps,
                                     weight ? 1u : 0u,
                                     bias ? 1u : 0u,
                                     silu ? 1u : 0u};
    run_norm(rec, "group_norm", x, y, params, channels, weight, bias);
}

void layer_norm(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t rows,
                uint32_t n, const VulkanBuffer* weight, const VulkanBuffer* bias, float eps) {
    const shaders::NormParams params{rows, n, 1, 1, 0, eps, weight ? 1u : 0u, bias ? 1u : 0u, 0};
    run_norm(rec, "layer_norm", x, y, params, n, weight, bias);
}

void rms_norm(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t rows,
              uint32_t n, const VulkanBuffer* weight, float eps) {
    const shaders::NormParams params{rows, n, 1, 1, 1, eps, weight ? 1u : 0u, 0, 0};
    run_norm(rec, "rms_norm", x, y, params, n, weight, nullptr);
}

void softmax(CommandRecorder& rec, const VulkanBuffer& x, VulkanBuffer& y, uint32_t rows,
             uint32_t n) {
    const shaders::NormParams params{rows, n, 1, 1, 2, 0.0f, 0, 0, 0};
    run_norm(rec, "softmax", x, y, params, n, nullptr, nullptr);
}

void attention(CommandRecorder& rec, const AttentionShape& s, const VulkanBuffer& q,
               const View4& qv, const VulkanBuffer& k, const View4& kv, const VulkanBuffer& v,
               const View4& vv, const VulkanBuffer* mask, const View4& mask_view,
               VulkanBuffer& out) {
    const ShaderSpec* spec = shaders::attention(s.d, s.dv, blocking_for(rec.device(), s.blocking));
    SD_CHECK(spec, "Vulkan attention: heads of %u are wider than its 512", s.d);
    const auto expect = [](const View4& view, const uint32_t(&shape)[4], const char* what) {
        for (int d = 0; d < 4; ++d)
            SD_CHECK(view.shape[d] == shape[d],
                     "Vulkan attention: %s is [%u, %u, %u, %u], want [%u, %u, %u, %u]", what,
                     view.shape[0], view.shape[1], view.shape[2], view.shape[3], shape[0], shape[1],
                     shape[2], shape[3]);
    };
    expect(qv, {s.batch, s.heads, s.lq, s.d}, "q");
    expect(kv, {s.batch, s.heads, s.lk, s.d}, "k");
    expect(vv, {s.batch, s.heads, s.lk, s.dv}, "v");
    check_view(q, qv, "attention", "q");
    check_view(k, kv, "attention", "k");
    check_view(v, vv, "attention", "v");
    View4 mv;
    if (mask) {
        mv = broadcast_view4(mask_view, {s.batch, s.heads, s.lq, s.lk});
        check_view(*mask, mv, "attention", "the mask");
    }
    const uint64_t count = uint64_t(s.batch) * s.heads * s.lq * s.dv;
    check_floats(out, count, "attention", "out");
    SD_CHECK(uint64_t(s.batch) * s.heads <= 65535,
             "Vulkan attention: %u x %u batch heads, at most 65535", s.batch, s.heads);
    if (count == 0) return;

    shaders::AttentionParams params{};
    params.heads = s.heads;
    params.lq = s.lq;
    params.lk = s.lk;
    params.d = s.d;
    params.dv = s.dv;
    params.scale = s.scale != 0.0f ? s.scale : 1.0f / std::sqrt(float(s.d));
    params.causal = s.causal ? 1 : 0;
    params.has_mask = mask ? 1 : 0;
    for (int d = 0; d < 4; ++d) {
        params.q_strides[d] = qv.strides[d];
        params.k_strides[d] = kv.strides[d];
        params.v_strides[d] = vv.strides[d];
        params.mask_strides[d] = mv.strides[d];
    }
    params.q_offset = qv.offset;
    params.k_offset = kv.offset;
    params.v_offset = vv.offset;
    params.mask_offset = mv.offset;
    // Without a mask q is bound in its place, never read. 128 output columns a dispatch.
    const VulkanKernel& kernel = rec.device().kernel(*spec);
    for (params.v_col0 = 0; params.v_col0 < s.dv; params.v_col0 += 128)
        rec.dispatch(kernel, {&q, &k, &v, mask ? mask : &q, &out}, &params, sizeof(params),
                     (s.lq + 63) / 64, s.batch * s.heads);
}

}  // namespace sd::gpu
