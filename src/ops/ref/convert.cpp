// Reference dtype conversion: the specification. One thread, logical indices, every row
// through an f32 buffer with ref::dequantize_row / ref::quantize_row.
#include <vector>

#include "base/error.h"
#include "ops/convert.h"
#include "tensor/quant.h"

namespace sd::ref {
namespace {

// Element offset of the element with row-major flat index `flat`.
int64_t offset_of(const Tensor& x, int64_t flat) {
    int64_t off = 0;
    for (int d = x.dim() - 1; d >= 0; --d) {
        off += (flat % x.size(d)) * x.stride(d);
        flat /= x.size(d);
    }
    return off;
}

// Row r (of `inner` values) of x as f32.
void read_row(const Tensor& x, int64_t r, int64_t inner, float* row) {
    const auto* base = static_cast<const uint8_t*>(x.data_ptr());
    if (is_quantized(x.dtype())) {
        // Rows of block-quant tensors are whole and contiguous.
        const int64_t off = offset_of(x, r * inner);
        ref::dequantize_row(x.dtype(), base + row_bytes(x.dtype(), off), row, inner);
        return;
    }
    const size_t elem = dtype_info(x.dtype()).type_size;
    for (int64_t i = 0; i < inner; ++i) {
        const int64_t off = offset_of(x, r * inner + i);
        ref::dequantize_row(x.dtype(), base + static_cast<size_t>(off) * elem, row + i, 1);
    }
}

}  // namespace

Tensor convert(const Tensor& x, DType dtype) {
    SD_CHECK(x.defined(), "convert: undefined input");
    SD_CHECK(x.device() == Device::CPU, "convert: %s is not in host memory", x.describe().c_str());
    const DTypeInfo& info = dtype_info(dtype);  // throws for an unknown dtype
    const int64_t inner = x.dim() > 0 ? x.size(-1) : 1;
    SD_CHECK(inner % info.block_size == 0,
             "convert: cannot convert %s to %s: the last dimension (%lld) must be a multiple of "
             "the %s block size %lld",
             x.describe().c_str(), info.name, static_cast<long long>(inner), info.name,
             static_cast<long long>(info.block_size));
    if (x.dtype() == dtype) return x.clone();
    Tensor out = Tensor::empty(x.shape(), dtype);
    const int64_t rows = inner > 0 ? x.numel() / inner : 0;
    auto* dst = static_cast<uint8_t*>(out.data_ptr());
    std::vector<float> row(static_cast<size_t>(inner));
    for (int64_t r = 0; r < rows; ++r) {
        read_row(x, r, inner, row.data());
        ref::quantize_row(dtype, row.data(), dst + row_bytes(dtype, r * inner), inner);
    }
    return out;
}

}  // namespace sd::ref
