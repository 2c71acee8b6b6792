#include "tensor/shape.h"

#include "base/error.h"

namespace sd {

Shape::Shape(std::initializer_list<int64_t> dims) {
    for (int64_t d : dims) push_back(d);
}

Shape::Shape(const std::vector<int64_t>& dims) {
    for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t d) {
    SD_CHECK(ndim_ < kMaxDims, "a tensor has at most %d dimensions", kMaxDims);
    dims_[ndim_++] = d;
}

int64_t Shape::numel() const {
    // Unsigned: a zero dimension beside huge ones (a valid empty tensor) must not overflow.
    uint64_t n = 1;
    for (int i = 0; i < ndim_; ++i) n *= static_cast<uint64_t>(dims_[i]);
    return static_cast<int64_t>(n);
}

std::string Shape::to_string() const {
    std::string s = "[";
    for (int i = 0; i < ndim_; ++i) {
        if (i) s += ", ";
        s += std::to_string(dims_[i]);
    }
    return s + "]";
}

bool Shape::operator==(const Shape& other) const {
    if (ndim_ != other.ndim_) return false;
    for (int i = 0; i < ndim_; ++i) {
        if (dims_[i] != other.dims_[i]) return false;
    }
    return true;
}

}  // namespace sd
