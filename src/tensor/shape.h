// A tensor's extent: up to five dimensions, outermost first (PyTorch order).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace sd {

constexpr int kMaxDims = 5;

class Shape {
  public:
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims);
    explicit Shape(const std::vector<int64_t>& dims);

    int size() const { return ndim_; }
    int64_t operator[](int i) const { return dims_[i]; }
    int64_t& operator[](int i) { return dims_[i]; }
    const int64_t* begin() const { return dims_; }
    const int64_t* end() const { return dims_ + ndim_; }

    // Product of all dimensions (1 for a scalar).
    int64_t numel() const;
    void push_back(int64_t d);
    std::vector<int64_t> to_vector() const { return {begin(), end()}; }
    std::string to_string() const;  // "[2, 3, 4]"

    bool operator==(const Shape& other) const;
    bool operator!=(const Shape& other) const { return !(*this == other); }

  private:
    int64_t dims_[kMaxDims] = {};
    int ndim_ = 0;
};

}  // namespace sd
