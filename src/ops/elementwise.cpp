// Elementwise arithmetic with broadcasting. The operands are expanded to the broadcast
// shape (stride 0 where they repeat) and walked in runs along the merged innermost
// dimension; each run goes to the vector kernel that fits its strides: both unit stride
// (same shape, per-row [N] over [..., N]), one operand fixed along the run (scalar,
// per-channel [C, 1, 1] over [B, C, H, W]), or anything else through packed buffers.
//
// This file also holds the pointwise kernel tables' dispatch on active_isa().
#include "ops/elementwise.h"

#include <algorithm>

#include "base/cpu_features.h"
#include "gpu/device_ops.h"
#include "ops/cpu/pointwise_kernels.h"
#include "ops/cpu/strided_iter.h"

namespace sd {

namespace cpu {
namespace {
constexpr PointwiseKernels kPointwiseGeneric = PointwiseLoops<ScalarSimd>::table();
}  // namespace

const PointwiseKernels& pointwise_kernels(Isa isa) {
#ifdef SD_X86_KERNELS
    if (static_cast<int>(isa) > static_cast<int>(best_supported_isa())) isa = best_supported_isa();
    if (isa == Isa::Avx512) return kPointwiseAvx512;
    if (isa == Isa::Avx2) return kPointwiseAvx2;
#endif
    return kPointwiseGeneric;
}

const PointwiseKernels& pointwise_kernels() {
    return pointwise_kernels(active_isa());
}
}  // namespace cpu

namespace {

using cpu::BinaryKind;

const char* binary_name(BinaryKind kind) {
    switch (kind) {
        case BinaryKind::Add:
            return "add";
        case BinaryKind::Sub:
            return "sub";
        case BinaryKind::Mul:
            return "mul";
        case BinaryKind::Div:
            return "div";
        default:
            return "?";
    }
}

Shape broadcast_for(const Shape& a, const Shape& b, const char* op) {
    const int nd = std::max(a.size(), b.size());
    Shape out;
    for (int i = 0; i < nd; ++i) {
        const int ia = i - (nd - a.size()), ib = i - (nd - b.size());
        const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        SD_CHECK(da == db || da == 1 || db == 1,
                 "%s: shapes %s and %s do not broadcast (dimension %d: %lld vs %lld)", op,
                 a.to_string().c_str(), b.to_string().c_str(), i, static_cast<long long>(da),
                 static_cast<long long>(db));
        out.push_back(da == 1 ? db : da);
    }
    return out;
}

// y[0, n) = a op b for operands stepping by sa and sb along the run.
void binary_run(const cpu::PointwiseKernels& k, int op, const float* a, int64_t sa, const float* b,
                int64_t sb, float* y, int64_t n) {
    if (sa == 1 && sb == 1) return k.binary[op](a, b, y, n);
    if (sa == 1 && sb == 0) return k.binary_rs[op](a, *b, y, n);
    if (sa == 0 && sb == 1) return k.binary_ls[op](b, *a, y, n);
    constexpr int64_t kBuf = 256;
    float ba[kBuf], bb[kBuf];
    for (int64_t i = 0; i < n; i += kBuf) {
        const int64_t m = std::min(kBuf, n - i);
        cpu::gather_strided(a + i * sa, sa, m, ba);
        cpu::gather_strided(b + i * sb, sb, m, bb);
        k.binary[op](ba, bb, y + i, m);
    }
}

Tensor binary_op(BinaryKind kind, const Tensor& a, const Tensor& b) {
    const char* name = binary_name(kind);
    cpu::require_f32(a, name, "a");
    cpu::require_f32(b, name, "b");
    const Shape shape = broadcast_for(a.shape(), b.shape(), name);
    Tensor out = Tensor::empty(shape);
    if (out.numel() == 0) return out;
    const Tensor ae = a.expand(shape), be = b.expand(shape);
    const auto* pa = static_cast<const float*>(ae.data_ptr());
    const auto* pb = static_cast<const float*>(be.data_ptr());
    float* py = out.data<float>();
    const cpu::PointwiseKernels& k = cpu::pointwise_kernels();
    const int op = static_cast<int>(kind);
    cpu::StridedIter<3> it(shape, {&out.strides(), &ae.strides(), &be.strides()});
    const int64_t sa = it.inner_stride(1), sb = it.inner_stride(2);
    parallel_for(it.numel(), cpu::kGrainMemory, [&](int64_t begin, int64_t end) {
        it.for_each_run(begin, end, [&](const int64_t* off, int64_t len) {
            binary_run(k, op, pa + off[1], sa, pb + off[2], sb, py + off[0], len);
        });
    });
    return out;
}

Tensor scalar_op(BinaryKind kind, const Tensor& x, float s, const char* name) {
    cpu::require_f32(x, name, "x");
    const cpu::BinaryScalarFn fn = cpu::pointwise_kernels().binary_rs[static_cast<int>(kind)];
    return cpu::map_strided(x, cpu::kGrainMemory,
                            [&](const float* src, float* dst, int64_t n) { fn(src, s, dst, n); });
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
    return broadcast_for(a, b, "broadcast");
}

Tensor add(const Tensor& a, const Tensor& b) {
    if (on_device::any({&a, &b})) [[unlikely]]
        return on_device::arith(on_device::Arith::Add, a, b);
    return binary_op(BinaryKind::Add, a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
    if (on_device::any({&a, &b})) [[unlikely]]
        return on_device::arith(on_device::Arith::Sub, a, b);
    return binary_op(BinaryKind::Sub, a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
    if (on_device::any({&a, &b})) [[unlikely]]
        return on_device::arith(on_device::Arith::Mul, a, b);
    return binary_op(BinaryKind::Mul, a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
    if (on_device::any({&a, &b})) [[unlikely]]
        return on_device::arith(on_device::Arith::Div, a, b);
    return binary_op(BinaryKind::Div, a, b);
}
Tensor scale(const Tensor& x, float s) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(on_device::Pointwise::Scale, x, s);
    return scalar_op(BinaryKind::Mul, x, s, "scale");
}
Tensor add_scalar(const Tensor& x, float s) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pointwise(on_device::Pointwise::AddScalar, x, s);
    return scalar_op(BinaryKind::Add, x, s, "add_scalar");
}

void add_scaled_into(const Tensor& a, const Tensor& b, float s, const Tensor& out) {
    if (on_device::any({&a, &b, &out})) [[unlikely]]
        return on_device::add_scaled_into(a, b, s, out);
    cpu::require_f32(a, "add_scaled_into", "a");
    cpu::require_f32(b, "add_scaled_into", "b");
    cpu::require_output(out, a.shape(), "add_scaled_into");
    SD_CHECK(b.shape() == a.shape(), "add_scaled_into: %s and %s differ in shape",
             a.describe().c_str(), b.describe().c_str());
    const Tensor ac = cpu::readable_beside(a, out, "add_scaled_into");
    const Tensor bc = cpu::readable_beside(b, out, "add_scaled_into");
    const float* pa = ac.data<float>();
    const float* pb = bc.data<float>();
    float* po = out.data<float>();
    parallel_for(out.numel(), cpu::kGrainCompute, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = pa[i] + s * pb[i];
    });
}

}  // namespace sd
