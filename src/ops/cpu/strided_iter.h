// Internal helpers of the CPU ops: walking N strided tensors of one (broadcast) shape in
// row-major order, in runs along the innermost dimension, plus the f32 argument check and
// the unary "map over any strides into a packed output" every pointwise op is built on.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "base/error.h"
#include "base/thread_pool.h"
#include "tensor/tensor.h"

namespace sd::cpu {

// Throws naming the op and the argument unless t is a defined f32 tensor in host memory.
inline void require_f32(const Tensor& t, const char* op, const char* arg) {
    SD_CHECK(t.defined(), "%s: %s is undefined", op, arg);
    SD_CHECK(t.dtype() == DType::F32, "%s: %s must be f32, got %s", op, arg, t.describe().c_str());
    SD_CHECK(t.device() == Device::CPU, "%s: %s is not in host memory", op, arg);
}

// For ops that write into a given tensor: throws unless `out` is a contiguous f32 tensor
// of `shape` in host memory.
inline void require_output(const Tensor& out, const Shape& shape, const char* op) {
    require_f32(out, op, "the output");
    SD_CHECK(out.shape() == shape && out.is_contiguous(),
             "%s: the output %s must be contiguous and of the input's shape", op,
             out.describe().c_str());
}

// `in` packed for reading element by element beside the writes to `out`: a strided input
// is copied first; a packed one is read in place, which is safe when it is `out` itself or
// does not overlap it (partial overlap throws).
inline Tensor readable_beside(const Tensor& in, const Tensor& out, const char* op) {
    if (!in.is_contiguous()) return in.contiguous();
    const bool partial = in.storage() == out.storage() && in.offset() != out.offset() &&
                         in.offset() < out.offset() + out.numel() &&
                         out.offset() < in.offset() + in.numel();
    SD_CHECK(!partial, "%s: the output %s overlaps the input %s", op, out.describe().c_str(),
             in.describe().c_str());
    return in;
}

// Offset (in elements) of the element with row-major flat index `flat` of a view.
inline int64_t strided_offset(const Shape& shape, const Strides& strides, int64_t flat) {
    int64_t off = 0;
    for (int d = shape.size() - 1; d >= 0 && flat > 0; --d) {
        off += (flat % shape[d]) * strides[d];
        flat /= shape[d];
    }
    return off;
}

// Iterates the elements of N operands that share `shape` (each with its own strides; 0 for
// broadcast dimensions) in row-major order. Size-1 dimensions are dropped and dimensions
// that are contiguous with the next one in every operand are merged, so the innermost
// dimension is as long as possible.
template <int N>
class StridedIter {
  public:
    StridedIter(const Shape& shape, const std::array<const Strides*, N>& strides) {
        numel_ = shape.numel();
        ndim_ = 0;
        for (int d = 0; d < shape.size(); ++d) {
            if (shape[d] == 1) continue;
            if (ndim_ > 0 && mergeable(shape, strides, d)) {
                shape_[ndim_ - 1] *= shape[d];
                for (int k = 0; k < N; ++k) strides_[k][ndim_ - 1] = (*strides[k])[d];
                continue;
            }
            shape_[ndim_] = shape[d];
            for (int k = 0; k < N; ++k) strides_[k][ndim_] = (*strides[k])[d];
            ++ndim_;
        }
        if (ndim_ == 0) {  // a single element
            shape_[0] = 1;
            for (int k = 0; k < N; ++k) strides_[k][0] = 0;
            ndim_ = 1;
        }
    }

    int64_t numel() const { return numel_; }
    int ndim() const { return ndim_; }
    int64_t size(int d) const { return shape_[d]; }
    int64_t stride(int k, int d) const { return strides_[k][d]; }
    int64_t inner_size() const { return shape_[ndim_ - 1]; }
    int64_t inner_stride(int k) const { return strides_[k][ndim_ - 1]; }

    // Calls fn(const int64_t* offsets, int64_t len) for each run of flat indices in
    // [begin, end) that stays inside one innermost row; offsets[k] is operand k's offset of
    // the run's first element, and the run steps by inner_stride(k).
    template <class F>
    void for_each_run(int64_t begin, int64_t end, F&& fn) const {
        if (begin >= end) return;
        int64_t idx[kMaxDims];
        int64_t off[N];
        seek(begin, idx, off);
        const int last = ndim_ - 1;
        for (int64_t pos = begin; pos < end;) {
            const int64_t len = std::min(shape_[last] - idx[last], end - pos);
            fn(static_cast<const int64_t*>(off), len);
            pos += len;
            idx[last] += len;
            for (int k = 0; k < N; ++k) off[k] += len * strides_[k][last];
            carry(idx, off);
        }
    }

    // Calls fn(const int64_t* offsets) for every element with flat index in [begin, end).
    template <class F>
    void for_each_index(int64_t begin, int64_t end, F&& fn) const {
        for_each_run(begin, end, [&](const int64_t* off, int64_t len) {
            int64_t o[N];
            for (int k = 0; k < N; ++k) o[k] = off[k];
            for (int64_t i = 0; i < len; ++i) {
                fn(static_cast<const int64_t*>(o));
                for (int k = 0; k < N; ++k) o[k] += inner_stride(k);
            }
        });
    }

  private:
    bool mergeable(const Shape& shape, const std::array<const Strides*, N>& strides, int d) const {
        for (int k = 0; k < N; ++k) {
            if (strides_[k][ndim_ - 1] != (*strides[k])[d] * shape[d]) return false;
        }
        return true;
    }

    void seek(int64_t flat, int64_t* idx, int64_t* off) const {
        for (int k = 0; k < N; ++k) off[k] = 0;
        for (int d = ndim_ - 1; d >= 0; --d) {
            idx[d] = flat % shape_[d];
            flat /= shape_[d];
            for (int k = 0; k < N; ++k) off[k] += idx[d] * strides_[k][d];
        }
    }

    // Wraps dimensions that ran past their end into the next outer one.
    void carry(int64_t* idx, int64_t* off) const {
        for (int d = ndim_ - 1; d > 0 && idx[d] == shape_[d]; --d) {
            idx[d] = 0;
            ++idx[d - 1];
            for (int k = 0; k < N; ++k) {
                off[k] += strides_[k][d - 1] - shape_[d] * strides_[k][d];
            }
        }
    }

    int ndim_ = 0;
    int64_t numel_ = 0;
    int64_t shape_[kMaxDims] = {};
    int64_t strides_[N][kMaxDims] = {};
};

// Copies n elements that are `stride` apart into packed dst.
template <class T>
inline void gather_strided(const T* src, int64_t stride, int64_t n, T* dst) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
}

// Elements per task of memory-bound loops, and of loops that evaluate exp/erf per element.
constexpr int64_t kGrainMemory = 32768;
constexpr int64_t kGrainCompute = 8192;

// out = a packed f32 tensor of x's shape with out[i] = f(x[i]), where the kernel
// fn(const float* src, float* dst, int64_t n) maps a packed run. Any strides in: runs that
// are not unit-stride are gathered into a small buffer first. Split over the pool.
template <class Fn>
Tensor map_strided(const Tensor& x, int64_t grain, Fn&& fn) {
    Tensor out = Tensor::empty(x.shape());
    const int64_t n = x.numel();
    const auto* src = static_cast<const float*>(x.data_ptr());
    float* dst = out.data<float>();
    if (x.is_contiguous()) {
        parallel_for(n, grain, [&](int64_t b, int64_t e) { fn(src + b, dst + b, e - b); });
        return out;
    }
    StridedIter<2> it(x.shape(), {&out.strides(), &x.strides()});
    const int64_t step = it.inner_stride(1);
    parallel_for(n, grain, [&](int64_t b, int64_t e) {
        it.for_each_run(b, e, [&](const int64_t* off, int64_t len) {
            if (step == 1) {
                fn(src + off[1], dst + off[0], len);
                return;
            }
            constexpr int64_t kBuf = 512;
            float buf[kBuf];
            for (int64_t i = 0; i < len; i += kBuf) {
                const int64_t m = std::min(kBuf, len - i);
                gather_strided(src + off[1] + i * step, step, m, buf);
                fn(buf, dst + off[0] + i, m);
            }
        });
    });
    return out;
}

}  // namespace sd::cpu
