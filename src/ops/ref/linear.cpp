// Reference linear and matmul: the specification. Plain loops over logical indices (any
// strides), double accumulation, one thread.
#include <vector>

#include "base/error.h"
#include "ops/linear.h"
#include "tensor/half.h"
#include "tensor/quant.h"

namespace sd::ref {
namespace {

// Value of a plain-dtype tensor at element offset `off` from its first element.
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

// Element offset of flat row-major index `flat` over the first `ndims` dims of t.
int64_t offset_of(const Tensor& t, int ndims, int64_t flat) {
    int64_t off = 0;
    for (int d = ndims - 1; d >= 0; --d) {
        off += (flat % t.size(d)) * t.stride(d);
        flat /= t.size(d);
    }
    return off;
}

// Row n of a [N, K] weight of any dtype, as f32.
std::vector<float> weight_row(const Tensor& w, int64_t n) {
    const int64_t k = w.size(1);
    std::vector<float> row(static_cast<size_t>(k));
    if (is_quantized(w.dtype())) {
        const auto* base = static_cast<const uint8_t*>(w.data_ptr());
        ref::dequantize_row(w.dtype(), base + row_bytes(w.dtype(), n * w.stride(0)), row.data(), k);
    } else {
        for (int64_t i = 0; i < k; ++i) row[i] = value_at(w, n * w.stride(0) + i * w.stride(1));
    }
    return row;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    SD_CHECK(x.defined() && weight.defined(), "linear: undefined input or weight");
    SD_CHECK(x.dtype() == DType::F32 && x.dim() >= 1, "linear: input %s must be f32 with 1+ dims",
             x.describe().c_str());
    SD_CHECK(weight.dim() == 2 && weight.dtype() != DType::I32,
             "linear: weight %s must be a 2-d float or block-quant tensor",
             weight.describe().c_str());
    SD_CHECK(weight.size(1) == x.size(-1),
             "linear: input %s and weight %s: in_features %lld != %lld", x.describe().c_str(),
             weight.describe().c_str(), static_cast<long long>(x.size(-1)),
             static_cast<long long>(weight.size(1)));
    const int64_t k = x.size(-1), n = weight.size(0);
    if (bias.defined()) {
        SD_CHECK(bias.dim() == 1 && bias.size(0) == n &&
                     (bias.dtype() == DType::F32 || bias.dtype() == DType::F16 ||
                      bias.dtype() == DType::BF16),
                 "linear: bias %s does not match weight %s", bias.describe().c_str(),
                 weight.describe().c_str());
    }
    Shape out_shape = x.shape();
    out_shape[out_shape.size() - 1] = n;
    Tensor out = Tensor::empty(out_shape);
    if (out.numel() == 0) return out;
    const int64_t m = out.numel() / n;
    float* o = out.data<float>();
    const float* xp = k > 0 ? x.data<float>() : nullptr;
    for (int64_t j = 0; j < n; ++j) {
        const std::vector<float> w = weight_row(weight, j);
        const double b = bias.defined() ? value_at(bias, j * bias.stride(0)) : 0.0;
        for (int64_t r = 0; r < m; ++r) {
            const int64_t xoff = offset_of(x, x.dim() - 1, r);
            double acc = 0.0;
            for (int64_t i = 0; i < k; ++i) {
                acc += static_cast<double>(xp[xoff + i * x.stride(-1)]) * w[i];
            }
            o[r * n + j] = static_cast<float>(acc + b);
        }
    }
    return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
    SD_CHECK(a.defined() && b.defined(), "matmul: undefined input");
    SD_CHECK(a.dtype() == DType::F32 && b.dtype() == DType::F32 && a.dim() >= 2 && b.dim() >= 2,
             "matmul: inputs %s and %s must be f32 with 2+ dims", a.describe().c_str(),
             b.describe().c_str());
    SD_CHECK(a.size(-1) == b.size(-2), "matmul: %s times %s: inner sizes differ",
             a.describe().c_str(), b.describe().c_str());
    const int na = a.dim() - 2, nb = b.dim() - 2, nbatch = std::max(na, nb);
    SD_CHECK(nbatch + 2 <= kMaxDims, "matmul: %s times %s has too many dimensions",
             a.describe().c_str(), b.describe().c_str());
    Shape out_shape;
    for (int i = 0; i < nbatch; ++i) {
        int64_t da = i - (nbatch - na) >= 0 ? a.size(i - (nbatch - na)) : 1;
        int64_t db = i - (nbatch - nb) >= 0 ? b.size(i - (nbatch - nb)) : 1;
        SD_CHECK(da == db || da == 1 || db == 1, "matmul: batch dims of %s and %s do not broadcast",
                 a.describe().c_str(), b.describe().c_str());
        out_shape.push_back(da == 1 ? db : da);
    }
    const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
    out_shape.push_back(m);
    out_shape.push_back(n);
    Tensor out = Tensor::empty(out_shape);
    if (out.numel() == 0) return out;
    const int64_t batches = out.numel() / (m * n);
    float* o = out.data<float>();
    const float* ap = a.numel() ? a.data<float>() : nullptr;
    const float* bp = b.numel() ? b.data<float>() : nullptr;
    for (int64_t t = 0; t < batches; ++t) {
        // Batch offsets, broadcasting size-1 (and missing) dims.
        int64_t aoff = 0, boff = 0, rem = t;
        for (int i = nbatch - 1; i >= 0; --i) {
            const int64_t idx = rem % out_shape[i];
            rem /= out_shape[i];
            const int da = i - (nbatch - na), db = i - (nbatch - nb);
            if (da >= 0 && a.size(da) != 1) aoff += idx * a.stride(da);
            if (db >= 0 && b.size(db) != 1) boff += idx * b.stride(db);
        }
        for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
                double acc = 0.0;
                for (int64_t q = 0; q < k; ++q) {
                    acc += static_cast<double>(ap[aoff + i * a.stride(-2) + q * a.stride(-1)]) *
                           bp[boff + q * b.stride(-2) + j * b.stride(-1)];
                }
                o[(t * m + i) * n + j] = static_cast<float>(acc);
            }
        }
    }
    return out;
}

}  // namespace sd::ref
