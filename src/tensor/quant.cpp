// Dispatch of the row conversions to the kernel of each dtype.
#include "tensor/quant.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "tensor/half.h"

namespace sd {
namespace {

void check_row(DType type, int64_t n) {
    SD_CHECK(n >= 0, "row of %s with negative length %lld", dtype_name(type),
             static_cast<long long>(n));
    SD_CHECK(n % block_size(type) == 0,
             "row of %lld values is not a multiple of the %s block (%lld)",
             static_cast<long long>(n), dtype_name(type), static_cast<long long>(block_size(type)));
}

}  // namespace

namespace ref {

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    check_row(type, n);
    switch (type) {
        case DType::F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case DType::F16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
            return;
        }
        case DType::BF16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
            return;
        }
        default:
            fail("dequantization of %s not implemented yet", dtype_name(type));
    }
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    check_row(type, n);
    switch (type) {
        case DType::F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case DType::F16: {
            auto* d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
            return;
        }
        case DType::BF16: {
            auto* d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
            return;
        }
        default:
            fail("quantization to %s not implemented yet", dtype_name(type));
    }
}

}  // namespace ref

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    ref::dequantize_row(type, src, dst, n);
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    ref::quantize_row(type, src, dst, n);
}

}  // namespace sd
