// Dtype conversion of whole tensors, split over the thread pool.
//
// Every conversion goes row by row through f32: the source row is dequantized (or, for
// a strided plain tensor, gathered and then converted) into an f32 buffer, which is then
// quantized into the packed output row. Source f32 rows and f32 outputs skip the buffer.
// Long rows are cut into pieces of whole blocks so a tensor of few rows still spreads
// over every thread; no block type looks beyond its own block, so pieces are independent.
#include "ops/convert.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "tensor/quant.h"

namespace sd {
namespace {

// Longest piece of a row handled as one work item: a multiple of every block size.
constexpr int64_t kMaxPiece = 64 * 1024;

struct Layout {
    int64_t inner = 1;  // values per row (the last dimension; 1 for a 0-d tensor)
    int64_t rows = 0;
    int64_t piece = 1;  // values per work item
    int64_t pieces_per_row = 0;
};

// Element offset of row r (flat index over every dimension but the last).
int64_t row_offset(const Tensor& x, int64_t r) {
    int64_t off = 0;
    for (int d = x.dim() - 2; d >= 0 && r > 0; --d) {
        off += (r % x.size(d)) * x.stride(d);
        r /= x.size(d);
    }
    return off;
}

// Copies `count` strided plain elements into a packed buffer.
void gather(const uint8_t* src, int64_t stride, size_t elem, int64_t count, uint8_t* dst) {
    for (int64_t i = 0; i < count; ++i) {
        std::memcpy(dst + static_cast<size_t>(i) * elem,
                    src + static_cast<size_t>(i * stride) * elem, elem);
    }
}

// Converts values [begin, begin + count) of row r of x into the packed row of out.
void convert_piece(const Tensor& x, const Tensor& out, int64_t inner, int64_t r, int64_t begin,
                   int64_t count, std::vector<float>& f32_buf, std::vector<uint8_t>& raw_buf) {
    const DType from = x.dtype(), to = out.dtype();
    const auto* base = static_cast<const uint8_t*>(x.data_ptr());
    auto* dst = static_cast<uint8_t*>(out.data_ptr()) + row_bytes(to, r * inner + begin);

    // The source piece as packed values of dtype `from`.
    const void* src;
    const int64_t inner_stride = x.dim() > 0 ? x.stride(-1) : 1;
    if (is_quantized(from)) {
        src = base + row_bytes(from, row_offset(x, r)) + row_bytes(from, begin);
    } else {
        const size_t elem = dtype_info(from).type_size;
        const uint8_t* p =
            base + static_cast<size_t>(row_offset(x, r) + begin * inner_stride) * elem;
        if (inner_stride == 1 || count == 1) {
            src = p;
        } else {
            raw_buf.resize(static_cast<size_t>(count) * elem);
            gather(p, inner_stride, elem, count, raw_buf.data());
            src = raw_buf.data();
        }
    }

    if (to == DType::F32) {
        dequantize_row(from, src, reinterpret_cast<float*>(dst), count);
    } else if (from == DType::F32) {
        quantize_row(to, static_cast<const float*>(src), dst, count);
    } else {
        f32_buf.resize(static_cast<size_t>(count));
        dequantize_row(from, src, f32_buf.data(), count);
        quantize_row(to, f32_buf.data(), dst, count);
    }
}

Layout layout_of(const Tensor& x) {
    Layout l;
    l.inner = x.dim() > 0 ? x.size(-1) : 1;
    l.rows = l.inner > 0 ? x.numel() / l.inner : 0;
    l.piece = std::min(l.inner, kMaxPiece);
    l.pieces_per_row = l.piece > 0 ? (l.inner + l.piece - 1) / l.piece : 0;
    return l;
}

void check_convert(const Tensor& x, DType dtype) {
    SD_CHECK(x.defined(), "convert: undefined input");
    SD_CHECK(x.device() == Device::CPU, "convert: %s is not in host memory", x.describe().c_str());
    const DTypeInfo& info = dtype_info(dtype);  // throws for an unknown dtype
    const int64_t inner = x.dim() > 0 ? x.size(-1) : 1;
    SD_CHECK(inner % info.block_size == 0,
             "convert: cannot convert %s to %s: the last dimension (%lld) must be a multiple of "
             "the %s block size %lld",
             x.describe().c_str(), info.name, static_cast<long long>(inner), info.name,
             static_cast<long long>(info.block_size));
    if (is_quantized(x.dtype())) {
        SD_CHECK(x.dim() > 0 && x.stride(-1) == 1, "convert: quantized input %s without whole rows",
                 x.describe().c_str());
    }
}

}  // namespace

Tensor convert(const Tensor& x, DType dtype) {
    check_convert(x, dtype);
    if (x.dtype() == dtype) return x.clone();
    Tensor out = Tensor::empty(x.shape(), dtype);
    const Layout l = layout_of(x);
    const int64_t items = l.rows * l.pieces_per_row;
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(l.piece, 1));
    parallel_for(items, grain, [&](int64_t begin, int64_t end) {
        std::vector<float> f32_buf;
        std::vector<uint8_t> raw_buf;
        for (int64_t item = begin; item < end; ++item) {
            const int64_t r = item / l.pieces_per_row;
            const int64_t start = (item % l.pieces_per_row) * l.piece;
            const int64_t count = std::min(l.piece, l.inner - start);
            convert_piece(x, out, l.inner, r, start, count, f32_buf, raw_buf);
        }
    });
    return out;
}

}  // namespace sd
