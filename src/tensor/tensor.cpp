#include "tensor/tensor.h"

#include <atomic>
#include <cstring>

#include "base/error.h"
#include "base/thread_pool.h"
#include "tensor/half.h"

namespace sd {

Strides contiguous_strides(const Shape& shape) {
    // Unsigned so that a shape with a zero dimension and huge others (zero bytes, so
    // valid) cannot overflow: its strides are never used to address anything.
    Strides strides = shape;
    uint64_t s = 1;
    for (int i = shape.size() - 1; i >= 0; --i) {
        strides[i] = static_cast<int64_t>(s);
        s *= static_cast<uint64_t>(shape[i]);
    }
    return strides;
}

namespace {

void check_shape(const Shape& shape) {
    for (int64_t d : shape)
        SD_CHECK(d >= 0, "negative dimension in shape %s", shape.to_string().c_str());
}

size_t checked_bytes(const Shape& shape, DType dtype) {
    check_shape(shape);
    // Guard the byte count against overflow: every factor fits, so divide to test.
    size_t bytes_per = dtype_info(dtype).type_size;
    int64_t block = block_size(dtype);
    SD_CHECK(shape.size() == 0 || shape[shape.size() - 1] % block == 0,
             "%s tensor of shape %s: the last dimension must be a multiple of %lld",
             dtype_name(dtype), shape.to_string().c_str(), static_cast<long long>(block));
    unsigned __int128 total = bytes_per;
    for (int64_t d : shape) total *= static_cast<uint64_t>(d);
    total /= static_cast<uint64_t>(block);
    SD_CHECK(total < (static_cast<unsigned __int128>(1) << 48), "tensor of shape %s is too large",
             shape.to_string().c_str());
    return static_cast<size_t>(total);
}

size_t element_size(DType dtype) {
    return dtype_info(dtype).type_size;
}

// Copies the strided view `src` into packed `dst` of the same shape and plain dtype.
void copy_strided_plain(const Tensor& src, void* dst) {
    const int nd = src.dim();
    const size_t es = element_size(src.dtype());
    const int64_t n = src.numel();
    if (n == 0) return;
    const auto* base = static_cast<const uint8_t*>(src.data_ptr());
    auto* out = static_cast<uint8_t*>(dst);
    if (nd == 0) {
        std::memcpy(out, base, es);
        return;
    }
    const int64_t inner = src.size(-1);
    const int64_t inner_stride = src.stride(-1);
    const int64_t rows = n / inner;
    const Shape& shape = src.shape();
    const Strides& strides = src.strides();
    parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)),
                 [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                         // Offset of row r from its multi-index over the outer dims.
                         int64_t off = 0, rem = r;
                         for (int d = nd - 2; d >= 0; --d) {
                             off += (rem % shape[d]) * strides[d];
                             rem /= shape[d];
                         }
                         const uint8_t* s = base + off * static_cast<int64_t>(es);
                         uint8_t* o = out + r * inner * static_cast<int64_t>(es);
                         if (inner_stride == 1) {
                             std::memcpy(o, s, inner * es);
                         } else if (es == 4) {
                             for (int64_t i = 0; i < inner; ++i) {
                                 std::memcpy(o + 4 * i, s + 4 * i * inner_stride, 4);
                             }
                         } else {
                             for (int64_t i = 0; i < inner; ++i) {
                                 std::memcpy(o + es * i, s + es * i * inner_stride, es);
                             }
                         }
                     }
                 });
}

// Block-quant tensors: rows are whole and contiguous, so copy them one by one.
void copy_strided_rows(const Tensor& src, void* dst) {
    const int nd = src.dim();
    const int64_t inner = src.size(-1);
    const size_t rb = row_bytes(src.dtype(), inner);
    const int64_t rows = src.numel() / std::max<int64_t>(inner, 1);
    auto* out = static_cast<uint8_t*>(dst);
    const auto* base = static_cast<const uint8_t*>(src.storage()->data());
    for (int64_t r = 0; r < rows; ++r) {
        int64_t off = src.offset(), rem = r;
        for (int d = nd - 2; d >= 0; --d) {
            off += (rem % src.shape()[d]) * src.strides()[d];
            rem /= src.shape()[d];
        }
        std::memcpy(out + r * rb, base + row_bytes(src.dtype(), off), rb);
    }
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype) {
    size_t bytes = checked_bytes(shape, dtype);
    return from_storage(Storage::allocate(bytes), 0, shape, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
    Tensor t = empty(shape, dtype);
    std::memset(t.data_ptr(), 0, t.nbytes());
    return t;
}

Tensor Tensor::full(const Shape& shape, float value) {
    Tensor t = empty(shape, DType::F32);
    float* p = t.data<float>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = value;
    return t;
}

Tensor Tensor::from_vector(const Shape& shape, const std::vector<float>& values) {
    SD_CHECK(static_cast<int64_t>(values.size()) == shape.numel(),
             "from_vector: %zu values for shape %s", values.size(), shape.to_string().c_str());
    Tensor t = empty(shape, DType::F32);
    if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(float));
    return t;
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, size_t byte_offset,
                            const Shape& shape, DType dtype) {
    SD_CHECK(storage != nullptr, "from_storage: no storage");
    size_t bytes = checked_bytes(shape, dtype);
    SD_CHECK(byte_offset <= storage->size() && bytes <= storage->size() - byte_offset,
             "tensor %s %s needs %zu bytes at offset %zu of a %zu-byte storage", dtype_name(dtype),
             shape.to_string().c_str(), bytes, byte_offset, storage->size());
    const DTypeInfo& info = dtype_info(dtype);
    SD_CHECK(byte_offset % info.type_size == 0,
             "%s tensor at byte offset %zu is not aligned to its %zu-byte blocks", info.name,
             byte_offset, info.type_size);
    Tensor t;
    t.storage_ = std::move(storage);
    t.dtype_ = dtype;
    t.shape_ = shape;
    t.strides_ = contiguous_strides(shape);
    t.offset_ = static_cast<int64_t>(byte_offset / info.type_size) * info.block_size;
    return t;
}

int Tensor::wrap_dim(int d) const {
    int n = dim();
    int w = d < 0 ? d + n : d;
    SD_CHECK(w >= 0 && w < n, "dimension %d out of range for a %d-d tensor %s", d, n,
             shape_.to_string().c_str());
    return w;
}

bool Tensor::is_contiguous() const {
    if (numel() == 0) return true;  // nothing to address
    int64_t expected = 1;
    for (int i = dim() - 1; i >= 0; --i) {
        if (shape_[i] != 1 && strides_[i] != expected) return false;
        expected *= shape_[i];
    }
    return true;
}

void* Tensor::data_ptr() const {
    SD_CHECK(storage_ != nullptr, "use of an undefined tensor");
    SD_CHECK(storage_->device() == Device::CPU,
             "%s is in the memory of %s: the host reads it only after a transfer (to_host)",
             describe().c_str(), storage_->device_name().c_str());
    return static_cast<uint8_t*>(storage_->data()) + row_bytes(dtype_, offset_);
}

void Tensor::check_element_type(size_t element_size) const {
    SD_CHECK(!is_quantized(dtype_) && dtype_info(dtype_).type_size == element_size,
             "tensor of dtype %s accessed as %zu-byte elements", dtype_name(dtype_), element_size);
}

Tensor Tensor::view(const Shape& shape) const {
    SD_CHECK(is_contiguous(), "view%s of a non-contiguous tensor %s; use reshape",
             shape.to_string().c_str(), describe().c_str());
    Shape out = shape;
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < out.size(); ++i) {
        if (out[i] == -1) {
            SD_CHECK(infer < 0, "view%s: more than one -1", shape.to_string().c_str());
            infer = i;
        } else {
            SD_CHECK(out[i] >= 0, "view%s: negative dimension", shape.to_string().c_str());
            known *= out[i];
        }
    }
    if (infer >= 0) {
        SD_CHECK(known > 0 && numel() % known == 0, "view%s of %s: sizes do not divide",
                 shape.to_string().c_str(), describe().c_str());
        out[infer] = numel() / known;
    }
    SD_CHECK(out.numel() == numel(), "view%s of %s: %lld elements, not %lld",
             shape.to_string().c_str(), describe().c_str(), static_cast<long long>(out.numel()),
             static_cast<long long>(numel()));
    if (is_quantized(dtype_)) {
        SD_CHECK(out.size() > 0 && out[out.size() - 1] % block_size(dtype_) == 0,
                 "view%s of %s: rows must stay whole blocks", shape.to_string().c_str(),
                 describe().c_str());
    }
    Tensor t = *this;
    t.shape_ = out;
    t.strides_ = contiguous_strides(out);
    return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
    if (is_contiguous()) return view(shape);
    return contiguous().view(shape);
}

Tensor Tensor::permute(const std::vector<int>& order) const {
    SD_CHECK(static_cast<int>(order.size()) == dim(), "permute of a %d-d tensor with %zu indices",
             dim(), order.size());
    Tensor t = *this;
    bool seen[kMaxDims] = {};
    for (int i = 0; i < dim(); ++i) {
        int src = wrap_dim(order[i]);
        SD_CHECK(!seen[src], "permute: dimension %d repeated", src);
        seen[src] = true;
        t.shape_[i] = shape_[src];
        t.strides_[i] = strides_[src];
    }
    if (is_quantized(dtype_)) {
        SD_CHECK(t.strides_[dim() - 1] == 1 && t.shape_[dim() - 1] == shape_[dim() - 1],
                 "permute of %s would split its quantized rows", describe().c_str());
    }
    return t;
}

Tensor Tensor::transpose(int a, int b) const {
    std::vector<int> order(dim());
    for (int i = 0; i < dim(); ++i) order[i] = i;
    std::swap(order[wrap_dim(a)], order[wrap_dim(b)]);
    return permute(order);
}

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
    d = wrap_dim(d);
    SD_CHECK(start >= 0 && length >= 0 && start + length <= shape_[d],
             "narrow(%d, %lld, %lld) out of range for %s", d, static_cast<long long>(start),
             static_cast<long long>(length), describe().c_str());
    if (is_quantized(dtype_) && d == dim() - 1) {
        SD_CHECK(start == 0 && length == shape_[d], "narrow would split the quantized rows of %s",
                 describe().c_str());
    }
    Tensor t = *this;
    t.shape_[d] = length;
    t.offset_ += start * strides_[d];
    return t;
}

Tensor Tensor::select(int d, int64_t index) const {
    d = wrap_dim(d);
    SD_CHECK(index >= -shape_[d] && index < shape_[d], "select(%d, %lld) out of range for %s", d,
             static_cast<long long>(index), describe().c_str());
    if (index < 0) index += shape_[d];
    Tensor t = narrow(d, index, 1);
    return t.squeeze(d);
}

Tensor Tensor::unsqueeze(int d) const {
    int n = dim();
    int w = d < 0 ? d + n + 1 : d;
    SD_CHECK(w >= 0 && w <= n, "unsqueeze(%d) out of range for %s", d, describe().c_str());
    Tensor t = *this;
    Shape shape;
    Strides strides;
    for (int i = 0; i <= n; ++i) {
        if (i == w) {
            shape.push_back(1);
            strides.push_back(i < n ? strides_[i] * shape_[i] : 1);
        }
        if (i < n) {
            shape.push_back(shape_[i]);
            strides.push_back(strides_[i]);
        }
    }
    t.shape_ = shape;
    t.strides_ = strides;
    return t;
}

Tensor Tensor::squeeze(int d) const {
    d = wrap_dim(d);
    SD_CHECK(shape_[d] == 1, "squeeze(%d) of %s: that dimension is not 1", d, describe().c_str());
    Tensor t = *this;
    Shape shape;
    Strides strides;
    for (int i = 0; i < dim(); ++i) {
        if (i == d) continue;
        shape.push_back(shape_[i]);
        strides.push_back(strides_[i]);
    }
    t.shape_ = shape;
    t.strides_ = strides;
    return t;
}

Tensor Tensor::flatten(int start_dim, int end_dim) const {
    if (dim() == 0) return reshape({1});
    int s = wrap_dim(start_dim), e = wrap_dim(end_dim);
    SD_CHECK(s <= e, "flatten(%d, %d) of %s", start_dim, end_dim, describe().c_str());
    Shape shape;
    for (int i = 0; i < s; ++i) shape.push_back(shape_[i]);
    int64_t merged = 1;
    for (int i = s; i <= e; ++i) merged *= shape_[i];
    shape.push_back(merged);
    for (int i = e + 1; i < dim(); ++i) shape.push_back(shape_[i]);
    return reshape(shape);
}

Tensor Tensor::expand(const Shape& shape) const {
    SD_CHECK(shape.size() >= dim(), "expand of %s to fewer dimensions %s", describe().c_str(),
             shape.to_string().c_str());
    SD_CHECK(!is_quantized(dtype_), "expand of quantized tensor %s", describe().c_str());
    Tensor t = *this;
    int lead = shape.size() - dim();
    Shape out_shape;
    Strides out_strides;
    for (int i = 0; i < shape.size(); ++i) {
        int src = i - lead;
        int64_t have = src >= 0 ? shape_[src] : 1;
        int64_t want = shape[i] == -1 ? have : shape[i];
        if (src >= 0 && have == want) {
            out_shape.push_back(have);
            out_strides.push_back(strides_[src]);
        } else {
            SD_CHECK(have == 1, "expand of %s to %s: dimension %d is %lld, not 1",
                     describe().c_str(), shape.to_string().c_str(), i,
                     static_cast<long long>(have));
            out_shape.push_back(want);
            out_strides.push_back(0);
        }
    }
    t.shape_ = out_shape;
    t.strides_ = out_strides;
    return t;
}

Tensor Tensor::as_strided(const Shape& shape, const Strides& strides, int64_t offset) const {
    SD_CHECK(defined(), "as_strided of an undefined tensor");
    SD_CHECK(!is_quantized(dtype_), "as_strided of quantized %s", describe().c_str());
    SD_CHECK(shape.size() == strides.size(), "as_strided: shape %s with strides %s",
             shape.to_string().c_str(), strides.to_string().c_str());
    check_shape(shape);
    // The lowest and highest element reached must both lie inside the storage.
    const int64_t capacity = static_cast<int64_t>(storage_->size() / dtype_info(dtype_).type_size);
    __int128 lo = offset, hi = offset;
    bool empty_view = shape.numel() == 0;
    for (int i = 0; i < shape.size(); ++i) {
        __int128 span = static_cast<__int128>(shape[i] - 1) * strides[i];
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    SD_CHECK(empty_view || (lo >= 0 && hi < capacity),
             "as_strided%s strides %s offset %lld reaches outside a storage of %lld elements",
             shape.to_string().c_str(), strides.to_string().c_str(), static_cast<long long>(offset),
             static_cast<long long>(capacity));
    Tensor t = *this;
    t.shape_ = shape;
    t.strides_ = strides;
    t.offset_ = offset;
    return t;
}

Tensor Tensor::contiguous() const {
    if (is_contiguous()) return *this;
    return clone();
}

namespace {
std::atomic<DeviceCopyFn> device_copy{nullptr};
}  // namespace

void set_device_copy(DeviceCopyFn copy) {
    device_copy.store(copy);
}

Tensor Tensor::clone() const {
    SD_CHECK(defined(), "clone of an undefined tensor");
    if (device() != Device::CPU) {
        const DeviceCopyFn copy = device_copy.load();
        SD_CHECK(copy, "copy of %s on %s: no device layer", describe().c_str(),
                 storage_->device_name().c_str());
        return copy(*this);
    }
    Tensor out = empty(shape_, dtype_);
    if (is_contiguous()) {
        std::memcpy(out.data_ptr(), data_ptr(), nbytes());
    } else if (is_quantized(dtype_)) {
        copy_strided_rows(*this, out.data_ptr());
    } else {
        copy_strided_plain(*this, out.data_ptr());
    }
    return out;
}

std::vector<float> Tensor::to_vector() const {
    SD_CHECK(defined(), "to_vector of an undefined tensor");
    SD_CHECK(!is_quantized(dtype_), "to_vector of quantized %s: dequantize it first",
             describe().c_str());
    Tensor packed = contiguous();
    std::vector<float> out(static_cast<size_t>(numel()));
    const void* p = packed.data_ptr();
    for (size_t i = 0; i < out.size(); ++i) {
        switch (dtype_) {
            case DType::F32:
                out[i] = static_cast<const float*>(p)[i];
                break;
            case DType::F16:
                out[i] = f16_to_f32(static_cast<const uint16_t*>(p)[i]);
                break;
            case DType::BF16:
                out[i] = bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
                break;
            case DType::I32:
                out[i] = static_cast<float>(static_cast<const int32_t*>(p)[i]);
                break;
            default:
                fail("to_vector: unsupported dtype %s", dtype_name(dtype_));
        }
    }
    return out;
}

float Tensor::item() const {
    SD_CHECK(numel() == 1, "item() of %s with %lld elements", describe().c_str(),
             static_cast<long long>(numel()));
    return to_vector()[0];
}

std::string Tensor::describe() const {
    if (!defined()) return "undefined";
    return std::string(dtype_name(dtype_)) + shape_.to_string();
}

}  // namespace sd
