// The public row conversions: argument checks, then the kernel of each dtype. Reference
// kernels live in quant_legacy.cpp / quant_k.cpp; fast dequantizers in quant_avx2.cpp /
// quant_avx512.cpp (the kernels of dequantize_kernels.h, once per ISA), picked from
// active_isa().
#include "tensor/quant.h"

#include <array>
#include <cmath>
#include <cstring>

#include "base/cpu_features.h"
#include "base/error.h"
#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace sd {
namespace {

// ---- plain types: a "block" is one value ----
// Values are read and written with memcpy: a row may start at any byte.

template <class T>
inline T load(const void* p, int64_t i) {
    T v;
    std::memcpy(&v, static_cast<const uint8_t*>(p) + i * static_cast<int64_t>(sizeof(T)),
                sizeof(T));
    return v;
}

template <class T>
inline void store(void* p, int64_t i, T v) {
    std::memcpy(static_cast<uint8_t*>(p) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

void dequantize_f32(const void* src, float* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void quantize_f32(const float* src, void* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load<uint16_t>(src, i));
}
void quantize_f16(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) store<uint16_t>(dst, i, f32_to_f16(src[i]));
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load<uint16_t>(src, i));
}
void quantize_bf16(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) store<uint16_t>(dst, i, f32_to_bf16(src[i]));
}

void dequantize_i32(const void* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<int32_t>(src, i));
}
// Round to nearest, ties to even; out-of-range values saturate and NaN becomes 0.
void quantize_i32(const float* src, void* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float r = std::nearbyint(src[i]);
        int32_t v;
        if (std::isnan(r)) {
            v = 0;
        } else if (r >= 2147483648.0f) {
            v = INT32_MAX;
        } else if (r < -2147483648.0f) {
            v = INT32_MIN;
        } else {
            v = static_cast<int32_t>(r);
        }
        store<int32_t>(dst, i, v);
    }
}

struct Kernels {
    quant::DequantizeFn dequantize = nullptr;
    quant::QuantizeFn quantize = nullptr;
};

// Reference kernels by GGUF type id.
const Kernels& ref_kernels(DType type) {
    static const auto table = [] {
        std::array<Kernels, 32> t{};
        auto set = [&](DType ty, quant::DequantizeFn dq, quant::QuantizeFn q) {
            t[static_cast<size_t>(ty)] = {dq, q};
        };
        set(DType::F32, dequantize_f32, quantize_f32);
        set(DType::F16, dequantize_f16, quantize_f16);
        set(DType::BF16, dequantize_bf16, quantize_bf16);
        set(DType::I32, dequantize_i32, quantize_i32);
        set(DType::Q4_0, quant::dequantize_q4_0, quant::quantize_q4_0);
        set(DType::Q4_1, quant::dequantize_q4_1, quant::quantize_q4_1);
        set(DType::Q5_0, quant::dequantize_q5_0, quant::quantize_q5_0);
        set(DType::Q5_1, quant::dequantize_q5_1, quant::quantize_q5_1);
        set(DType::Q8_0, quant::dequantize_q8_0, quant::quantize_q8_0);
        set(DType::Q2_K, quant::dequantize_q2_K, quant::quantize_q2_K);
        set(DType::Q3_K, quant::dequantize_q3_K, quant::quantize_q3_K);
        set(DType::Q4_K, quant::dequantize_q4_K, quant::quantize_q4_K);
        set(DType::Q5_K, quant::dequantize_q5_K, quant::quantize_q5_K);
        set(DType::Q6_K, quant::dequantize_q6_K, quant::quantize_q6_K);
        set(DType::IQ4_NL, quant::dequantize_iq4_nl, quant::quantize_iq4_nl);
        set(DType::IQ4_XS, quant::dequantize_iq4_xs, quant::quantize_iq4_xs);
        return t;
    }();
    // dtype_info throws sd::Error for an id outside the enum.
    (void)dtype_info(type);
    const Kernels& k = table[static_cast<size_t>(type)];
    SD_CHECK(k.dequantize && k.quantize, "no conversion kernels for dtype %s", dtype_name(type));
    return k;
}

// Returns the number of blocks in a row of n values; throws on a bad length or pointer.
int64_t checked_blocks(DType type, const void* src, const void* dst, int64_t n) {
    const int64_t bs = block_size(type);
    SD_CHECK(n >= 0, "%s row of negative length %lld", dtype_name(type), static_cast<long long>(n));
    SD_CHECK(n % bs == 0, "%s row of %lld values: not a multiple of the block size %lld",
             dtype_name(type), static_cast<long long>(n), static_cast<long long>(bs));
    SD_CHECK(n == 0 || (src && dst), "%s row conversion with a null pointer", dtype_name(type));
    return n / bs;
}

quant::DequantizeFn fast_dequantizer(DType type) {
#ifdef SD_X86_KERNELS
    const Isa isa = active_isa();
    if (isa >= Isa::Avx512) {
        if (quant::DequantizeFn fn = quant::avx512_dequantizer(type)) return fn;
    }
    if (isa >= Isa::Avx2) {
        if (quant::DequantizeFn fn = quant::avx2_dequantizer(type)) return fn;
    }
#endif
    return ref_kernels(type).dequantize;
}

}  // namespace

namespace ref {

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    const Kernels& k = ref_kernels(type);
    const int64_t nblocks = checked_blocks(type, src, dst, n);
    if (nblocks > 0) k.dequantize(src, dst, nblocks);
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    const Kernels& k = ref_kernels(type);
    const int64_t nblocks = checked_blocks(type, src, dst, n);
    if (nblocks > 0) k.quantize(src, dst, nblocks);
}

}  // namespace ref

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    const int64_t nblocks = checked_blocks(type, src, dst, n);
    if (nblocks > 0) fast_dequantizer(type)(src, dst, nblocks);
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    ref::quantize_row(type, src, dst, n);
}

}  // namespace sd
