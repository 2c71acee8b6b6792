// Tensor: a strided view of a Storage, with a dtype and up to five dimensions. Copies are
// cheap and share the storage (like torch.Tensor); ops never write into their inputs.
//
// Strides and the offset count elements. Block-quant tensors can only be viewed by whole
// rows: the innermost dimension stays contiguous and whole, so every row starts on a block.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace sd {

using Strides = Shape;  // same fixed-size container, in elements

class Tensor {
  public:
    Tensor() = default;  // undefined: defined() is false

    // Uninitialised contents.
    static Tensor empty(const Shape& shape, DType dtype = DType::F32);
    static Tensor zeros(const Shape& shape, DType dtype = DType::F32);
    static Tensor full(const Shape& shape, float value);  // f32
    // f32 tensor holding a copy of `values` (values.size() must equal shape.numel()).
    static Tensor from_vector(const Shape& shape, const std::vector<float>& values);
    // A contiguous tensor over existing storage, starting `byte_offset` bytes in.
    static Tensor from_storage(std::shared_ptr<Storage> storage, size_t byte_offset,
                               const Shape& shape, DType dtype);

    bool defined() const { return storage_ != nullptr; }
    DType dtype() const { return dtype_; }
    int dim() const { return shape_.size(); }
    const Shape& shape() const { return shape_; }
    const Strides& strides() const { return strides_; }
    int64_t size(int d) const { return shape_[wrap_dim(d)]; }
    int64_t stride(int d) const { return strides_[wrap_dim(d)]; }
    int64_t numel() const { return shape_.numel(); }
    int64_t offset() const { return offset_; }
    const std::shared_ptr<Storage>& storage() const { return storage_; }
    Device device() const { return storage_ ? storage_->device() : Device::CPU; }
    bool is_contiguous() const;
    // Bytes of the contiguous layout (numel of this dtype).
    size_t nbytes() const { return row_bytes(dtype_, numel()); }

    // Pointer to element 0 (the first byte of the view).
    void* data_ptr() const;
    template <class T>
    T* data() const {
        check_element_type(sizeof(T));
        return static_cast<T*>(data_ptr());
    }

    // ---- views (share storage) ----
    // Same elements, new shape; one dimension may be -1. Requires a contiguous tensor.
    Tensor view(const Shape& shape) const;
    // view() when possible, otherwise a contiguous copy reshaped.
    Tensor reshape(const Shape& shape) const;
    Tensor permute(const std::vector<int>& order) const;
    Tensor transpose(int a, int b) const;
    // Elements [start, start + length) along dim.
    Tensor narrow(int dim, int64_t start, int64_t length) const;
    // Index `index` of dim, removing that dim.
    Tensor select(int dim, int64_t index) const;
    Tensor unsqueeze(int dim) const;
    Tensor squeeze(int dim) const;
    Tensor flatten(int start_dim = 0, int end_dim = -1) const;
    // Broadcast size-1 dimensions (stride 0) and prepend new ones to reach `shape`.
    Tensor expand(const Shape& shape) const;
    // A view of the same storage with any shape, strides and offset (in elements, from the
    // storage's start), as torch.as_strided; every element it reaches must lie inside the
    // storage. Plain dtypes only.
    Tensor as_strided(const Shape& shape, const Strides& strides, int64_t offset) const;

    // ---- copies ----
    Tensor contiguous() const;  // this, or a packed copy
    Tensor clone() const;       // always a packed copy

    // Values as f32 in logical (row-major) order; any plain dtype and any strides. For
    // tests and debugging, not for kernels.
    std::vector<float> to_vector() const;
    float item() const;
    // "f32[2, 3, 4]"
    std::string describe() const;

    int wrap_dim(int d) const;  // negative d counts from the end; throws when out of range

  private:
    void check_element_type(size_t element_size) const;

    std::shared_ptr<Storage> storage_;
    DType dtype_ = DType::F32;
    Shape shape_;
    Strides strides_;
    int64_t offset_ = 0;
};

// How a tensor in a device's memory is copied (clone, contiguous): set by the device layer
// when it opens a device (gpu::open_stream), since that layer sits above this one.
using DeviceCopyFn = Tensor (*)(const Tensor&);
void set_device_copy(DeviceCopyFn copy);

// Row-major strides of a packed tensor of this shape.
Strides contiguous_strides(const Shape& shape);

}  // namespace sd
