#include "ops/embedding.h"

#include "base/error.h"
#include "base/thread_pool.h"
#include "tensor/quant.h"

namespace sd {
namespace {

Shape output_shape(const Tensor& weight, const Tensor& ids) {
    SD_CHECK(weight.dim() == 2, "embedding: weight %s is not 2-d", weight.describe().c_str());
    SD_CHECK(ids.dtype() == DType::I32, "embedding: ids %s are not i32", ids.describe().c_str());
    SD_CHECK(weight.stride(1) == 1, "embedding: weight rows must be contiguous");
    Shape out = ids.shape();
    out.push_back(weight.size(1));
    return out;
}

// Ids in logical order, each checked against the vocabulary size.
std::vector<int32_t> checked_ids(const Tensor& ids, int64_t vocab) {
    Tensor packed = ids.contiguous();
    const int32_t* p = packed.data<int32_t>();
    std::vector<int32_t> out(p, p + packed.numel());
    for (int32_t id : out) {
        SD_CHECK(id >= 0 && id < vocab, "embedding: id %d outside the vocabulary of %lld rows", id,
                 static_cast<long long>(vocab));
    }
    return out;
}

const uint8_t* row_ptr(const Tensor& weight, int64_t row) {
    return static_cast<const uint8_t*>(weight.data_ptr()) +
           row_bytes(weight.dtype(), row * weight.stride(0));
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& ids) {
    Shape shape = output_shape(weight, ids);
    std::vector<int32_t> rows = checked_ids(ids, weight.size(0));
    const int64_t dim = weight.size(1);
    Tensor out = Tensor::empty(shape);
    float* o = out.data<float>();
    parallel_for(static_cast<int64_t>(rows.size()), 8, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            dequantize_row(weight.dtype(), row_ptr(weight, rows[i]), o + i * dim, dim);
    });
    return out;
}

namespace ref {

Tensor embedding(const Tensor& weight, const Tensor& ids) {
    Shape shape = output_shape(weight, ids);
    std::vector<int32_t> rows = checked_ids(ids, weight.size(0));
    const int64_t dim = weight.size(1);
    Tensor out = Tensor::empty(shape);
    for (size_t i = 0; i < rows.size(); ++i) {
        ref::dequantize_row(weight.dtype(), row_ptr(weight, rows[i]), out.data<float>() + i * dim,
                            dim);
    }
    return out;
}

}  // namespace ref
}  // namespace sd
