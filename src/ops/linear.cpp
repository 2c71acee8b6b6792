// linear and matmul on the GEMM engine of ops/cpu/gemm.h.
#include "ops/linear.h"

#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "gpu/device_ops.h"
#include "ops/cpu/gemm.h"
#include "ops/flop_counter.h"

namespace sd {
namespace {

bool is_bias_dtype(DType d) {
    return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}

void check_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    SD_CHECK(x.defined() && weight.defined(), "linear: undefined %s",
             x.defined() ? "weight" : "input");
    SD_CHECK(x.dtype() == DType::F32 && x.dim() >= 1, "linear: input %s must be f32 with 1+ dims",
             x.describe().c_str());
    SD_CHECK(weight.dim() == 2 && weight.dtype() != DType::I32,
             "linear: weight %s must be a 2-d float or block-quant tensor",
             weight.describe().c_str());
    SD_CHECK(weight.size(1) == x.size(-1),
             "linear: input %s and weight %s: in_features %lld != %lld", x.describe().c_str(),
             weight.describe().c_str(), static_cast<long long>(x.size(-1)),
             static_cast<long long>(weight.size(1)));
    if (bias.defined()) {
        SD_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0) && is_bias_dtype(bias.dtype()),
                 "linear: bias %s does not match weight %s (want f32/f16/bf16 [%lld])",
                 bias.describe().c_str(), weight.describe().c_str(),
                 static_cast<long long>(weight.size(0)));
    }
}

// The rows of x ([..., K]) as one stride, when its leading dimensions merge into one.
bool merged_row_stride(const Tensor& x, int64_t* row_stride) {
    const int nd = x.dim();
    if (nd == 1) {
        *row_stride = x.size(0);
        return true;
    }
    int64_t stride = -1, extent = 1;  // stride of the innermost non-trivial leading dim
    for (int d = nd - 2; d >= 0; --d) {
        if (x.size(d) == 1) continue;
        if (stride < 0) {
            stride = x.stride(d);
        } else if (x.stride(d) != stride * extent) {
            return false;
        }
        extent *= x.size(d);
    }
    *row_stride = stride < 0 ? x.size(-1) : stride;
    return true;
}

// A weight whose rows are contiguous (a copy for strided plain weights).
Tensor with_contiguous_rows(const Tensor& weight) {
    if (weight.size(1) <= 1 || weight.stride(1) == 1) return weight;
    return weight.contiguous();
}

std::vector<float> bias_values(const Tensor& bias) {
    return bias.defined() ? bias.to_vector() : std::vector<float>{};
}

// Batch dims of torch.matmul: a's and b's leading dims broadcast together.
Shape broadcast_batch(const Tensor& a, const Tensor& b) {
    const int na = a.dim() - 2, nb = b.dim() - 2, n = std::max(na, nb);
    Shape out;
    for (int i = 0; i < n; ++i) {
        int64_t da = i - (n - na) >= 0 ? a.size(i - (n - na)) : 1;
        int64_t db = i - (n - nb) >= 0 ? b.size(i - (n - nb)) : 1;
        SD_CHECK(da == db || da == 1 || db == 1,
                 "matmul: batch dimensions of %s and %s do not broadcast", a.describe().c_str(),
                 b.describe().c_str());
        out.push_back(da == 1 ? db : da);
    }
    return out;
}

// Element offset of batch `index` (row-major over `batch`) in t, broadcasting size-1 dims.
int64_t batch_offset(const Tensor& t, const Shape& batch, int64_t index) {
    const int nt = t.dim() - 2;
    int64_t off = 0;
    for (int i = batch.size() - 1; i >= 0; --i) {
        const int64_t idx = index % batch[i];
        index /= batch[i];
        const int d = i - (batch.size() - nt);
        if (d >= 0 && t.size(d) != 1) off += idx * t.stride(d);
    }
    return off;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    if (on_device::any({&x, &weight, &bias})) [[unlikely]]
        return on_device::linear(x, weight, bias);
    check_linear(x, weight, bias);
    const int64_t k = x.size(-1), n = weight.size(0);
    Shape out_shape = x.shape();
    out_shape[out_shape.size() - 1] = n;
    const int64_t m = k > 0 ? x.numel() / k : out_shape.numel() / std::max<int64_t>(n, 1);
    Tensor out = Tensor::empty(out_shape);
    if (out.numel() == 0) return out;

    Tensor xs = x;
    int64_t row_stride = 0;
    if (!merged_row_stride(xs, &row_stride)) {
        xs = x.contiguous();
        row_stride = k;
    }
    const Tensor w = with_contiguous_rows(weight);
    const std::vector<float> b = bias_values(bias);

    cpu::GemmProblem pr;
    pr.m = m;
    pr.n = n;
    pr.k = k;
    pr.a = cpu::strided_source(xs.data<float>(), row_stride, xs.stride(-1));
    pr.b = cpu::row_source(w.dtype(), w.data_ptr(), w.stride(0));
    pr.c = out.data<float>();
    pr.ldc = n;
    pr.bias_n = b.empty() ? nullptr : b.data();
    cpu::gemm(pr);
    count_flops(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
    return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
    if (on_device::any({&a, &b})) [[unlikely]]
        return on_device::run_on_host(
            "matmul", {a, b}, [](const std::vector<Tensor>& h) { return matmul(h[0], h[1]); });
    SD_CHECK(a.defined() && b.defined(), "matmul: undefined input");
    SD_CHECK(a.dtype() == DType::F32 && b.dtype() == DType::F32 && a.dim() >= 2 && b.dim() >= 2,
             "matmul: inputs %s and %s must be f32 with 2+ dims", a.describe().c_str(),
             b.describe().c_str());
    SD_CHECK(a.size(-1) == b.size(-2), "matmul: %s times %s: inner sizes %lld != %lld",
             a.describe().c_str(), b.describe().c_str(), static_cast<long long>(a.size(-1)),
             static_cast<long long>(b.size(-2)));
    const Shape batch = broadcast_batch(a, b);
    const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
    Shape out_shape = batch;
    SD_CHECK(batch.size() + 2 <= kMaxDims, "matmul: %s times %s has too many dimensions",
             a.describe().c_str(), b.describe().c_str());
    out_shape.push_back(m);
    out_shape.push_back(n);
    Tensor out = Tensor::empty(out_shape);
    if (out.numel() == 0) return out;

    const int64_t batches = batch.numel();
    const float* pa = a.numel() ? a.data<float>() : nullptr;
    const float* pb = b.numel() ? b.data<float>() : nullptr;
    float* pc = out.data<float>();
    auto one = [&](int64_t i) {
        cpu::GemmProblem pr;
        pr.m = m;
        pr.n = n;
        pr.k = k;
        pr.a = cpu::strided_source(pa + batch_offset(a, batch, i), a.stride(-2), a.stride(-1));
        pr.b = cpu::strided_source(pb + batch_offset(b, batch, i), b.stride(-1), b.stride(-2));
        pr.c = pc + i * m * n;
        pr.ldc = n;
        cpu::gemm(pr);
    };
    // Many small products: one per thread at a time; otherwise each one uses every thread.
    const double flops = 2.0 * static_cast<double>(m) * n * k;
    count_flops(flops * static_cast<double>(batches));
    if (batches >= num_threads() && flops < 64e6) {
        parallel_for(batches, 1, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) one(i);
        });
    } else {
        for (int64_t i = 0; i < batches; ++i) one(i);
    }
    return out;
}

}  // namespace sd
