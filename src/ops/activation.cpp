// Activations and softmax: the vector kernels of cpu/pointwise_kernels.h over packed runs,
// any input strides, split over the pool.
#include "ops/activation.h"

#include <algorithm>
#include <vector>

#include "gpu/device_ops.h"
#include "ops/cpu/pointwise_kernels.h"
#include "ops/cpu/strided_iter.h"

namespace sd {
namespace {

using cpu::UnaryKind;

Tensor unary_op(UnaryKind kind, const Tensor& x, const char* name) {
    cpu::require_f32(x, name, "x");
    return cpu::map_strided(x, cpu::kGrainCompute,
                            cpu::pointwise_kernels().unary[static_cast<int>(kind)]);
}

// The dimensions (or strides) of s without dimension d.
Shape without(const Shape& s, int d) {
    Shape out;
    for (int i = 0; i < s.size(); ++i) {
        if (i != d) out.push_back(s[i]);
    }
    return out;
}

// Softmax of every line of x along d; lines that are not unit-stride go through a buffer.
void softmax_lines(const Tensor& x, int d, Tensor& out) {
    const int64_t n = x.size(d);
    const int64_t lines = x.numel() / n;
    const Shape shape = without(x.shape(), d);
    const Strides xs = without(x.strides(), d), os = without(out.strides(), d);
    const int64_t xstep = x.stride(d), ostep = out.stride(d);
    const auto* src = static_cast<const float*>(x.data_ptr());
    float* dst = out.data<float>();
    const cpu::PointwiseKernels& k = cpu::pointwise_kernels();
    parallel_for(lines, std::max<int64_t>(1, cpu::kGrainCompute / n), [&](int64_t b, int64_t e) {
        std::vector<float> buf;
        if (xstep != 1 || ostep != 1) buf.resize(static_cast<size_t>(n));
        for (int64_t r = b; r < e; ++r) {
            const float* line = src + cpu::strided_offset(shape, xs, r);
            float* oline = dst + cpu::strided_offset(shape, os, r);
            if (xstep == 1 && ostep == 1) {
                k.softmax(line, oline, n);
                continue;
            }
            cpu::gather_strided(line, xstep, n, buf.data());
            k.softmax(buf.data(), buf.data(), n);
            for (int64_t i = 0; i < n; ++i) oline[i * ostep] = buf[static_cast<size_t>(i)];
        }
    });
}

}  // namespace

Tensor gelu(const Tensor& x, GeluApprox approx) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(approx == GeluApprox::Tanh ? on_device::Pointwise::GeluTanh
                                                               : on_device::Pointwise::Gelu,
                                    x);
    return unary_op(approx == GeluApprox::Tanh ? UnaryKind::GeluTanh : UnaryKind::Gelu, x, "gelu");
}
Tensor silu(const Tensor& x) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(on_device::Pointwise::Silu, x);
    return unary_op(UnaryKind::Silu, x, "silu");
}
Tensor quick_gelu(const Tensor& x) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(on_device::Pointwise::QuickGelu, x);
    return unary_op(UnaryKind::QuickGelu, x, "quick_gelu");
}
Tensor sigmoid(const Tensor& x) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(on_device::Pointwise::Sigmoid, x);
    return unary_op(UnaryKind::Sigmoid, x, "sigmoid");
}
Tensor tanh(const Tensor& x) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(on_device::Pointwise::Tanh, x);
    return unary_op(UnaryKind::Tanh, x, "tanh");
}

Tensor clamp(const Tensor& x, float lo, float hi) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(on_device::Pointwise::Clamp, x, lo, hi);
    cpu::require_f32(x, "clamp", "x");
    const auto fn = cpu::pointwise_kernels().clamp;
    return cpu::map_strided(x, cpu::kGrainMemory, [&](const float* src, float* dst, int64_t n) {
        fn(src, dst, n, lo, hi);
    });
}

Tensor geglu(const Tensor& x) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::geglu(x);
    cpu::require_f32(x, "geglu", "x");
    SD_CHECK(x.dim() >= 1 && x.size(-1) % 2 == 0,
             "geglu: the last dimension of %s must be even (halves a, gate)", x.describe().c_str());
    const Tensor xs = x.dim() > 0 && x.stride(-1) == 1 ? x : x.contiguous();
    const int64_t n = xs.size(-1) / 2;
    Shape shape = xs.shape();
    shape[shape.size() - 1] = n;
    Tensor out = Tensor::empty(shape);
    if (out.numel() == 0) return out;
    const int64_t rows = out.numel() / n;
    const auto* src = static_cast<const float*>(xs.data_ptr());
    float* dst = out.data<float>();
    const auto fn = cpu::pointwise_kernels().geglu;
    parallel_for(rows, std::max<int64_t>(1, cpu::kGrainCompute / n), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
            const float* row = src + cpu::strided_offset(xs.shape(), xs.strides(), r * 2 * n);
            fn(row, row + n, dst + r * n, n);
        }
    });
    return out;
}

Tensor softmax(const Tensor& x, int dim) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::softmax(x, dim);
    cpu::require_f32(x, "softmax", "x");
    if (x.dim() == 0) return softmax(x.reshape({1}), dim).reshape({});
    const int d = x.wrap_dim(dim);
    Tensor out = Tensor::empty(x.shape());
    if (out.numel() > 0) softmax_lines(x, d, out);
    return out;
}

}  // namespace sd
