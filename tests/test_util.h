// Helpers shared by the unit tests: deterministic random tensors, non-contiguous views of
// the same values, and comparison with a stated tolerance.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "tensor/quant.h"
#include "tensor/tensor.h"

namespace sd::test {

// The paths temp_path handed out, removed (files and folders alike) when the test process that
// asked for them exits: the suite writes gigabytes of temporary checkpoints, and a test that
// forgets one must not fill the disk run after run. A forked child exiting leaves them alone.
class TempPaths {
  public:
    void add(const std::string& path) {
        std::lock_guard<std::mutex> lock(mutex_);
        paths_.push_back(path);
    }
    ~TempPaths() {
        if (::getpid() != owner_) return;
        for (const std::string& p : paths_) {
            std::error_code ec;
            std::filesystem::remove_all(p, ec);
        }
    }

  private:
    pid_t owner_ = ::getpid();
    std::mutex mutex_;
    std::vector<std::string> paths_;
};

inline TempPaths& temp_paths() {
    static TempPaths paths;
    return paths;
}

// A temp file's path named after the process and NAME: ctest runs each test of a suite as its
// own process, in parallel, so a fixed name would be written by two tests at once. Whatever is
// at the path when the process exits is removed.
inline std::string temp_path(const std::string& name) {
    std::string path = testing::TempDir() + "/sd_" + std::to_string(::getpid()) + "_" + name;
    temp_paths().add(path);
    return path;
}

// Uniform values in [lo, hi), the same for the same seed on every machine.
inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 gen(seed);
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (float& x : v) {
        x = lo + (hi - lo) * static_cast<float>(gen() >> 8) * (1.0f / 16777216.0f);
    }
    return Tensor::from_vector(shape, v);
}

// A [rows, cols] weight of `dtype` made from random values in [-1, 1) (quantized row by row).
inline Tensor random_weight(int64_t rows, int64_t cols, DType dtype, uint32_t seed) {
    Tensor f = random_tensor({rows, cols}, seed);
    if (dtype == DType::F32) return f;
    Tensor w = Tensor::empty({rows, cols}, dtype);
    const size_t rb = row_bytes(dtype, cols);
    for (int64_t r = 0; r < rows; ++r) {
        quantize_row(dtype, f.data<float>() + r * cols,
                     static_cast<uint8_t*>(w.data_ptr()) + r * rb, cols);
    }
    return w;
}

// The f32 values of a contiguous [rows, cols] weight of any dtype.
inline Tensor dequantized(const Tensor& w) {
    const int64_t rows = w.size(0), cols = w.size(1);
    Tensor f = Tensor::empty({rows, cols});
    const size_t rb = row_bytes(w.dtype(), cols);
    for (int64_t r = 0; r < rows; ++r) {
        ref::dequantize_row(w.dtype(), static_cast<const uint8_t*>(w.data_ptr()) + r * rb,
                            f.data<float>() + r * cols, cols);
    }
    return f;
}

// The same values as `t` but laid out so that `t` becomes a non-contiguous view: the data
// lives inside a larger buffer with the dimensions in reverse order, then is transposed
// back. The result equals t element for element and is_contiguous() is false (for 2+ dims).
inline Tensor non_contiguous_copy(const Tensor& t) {
    const int nd = t.dim();
    if (nd < 2) {
        // 1-d: every other element of a buffer twice as long.
        Tensor big = Tensor::zeros({t.numel() * 2});
        std::vector<float> v = t.to_vector();
        float* p = big.data<float>();
        for (size_t i = 0; i < v.size(); ++i) p[2 * i] = v[i];
        Tensor view = big.view({t.numel(), 2}).select(1, 0);
        return nd == 0 ? view.view({}) : view;
    }
    std::vector<int> rev(nd);
    Shape rev_shape;
    for (int i = 0; i < nd; ++i) {
        rev[i] = nd - 1 - i;
        rev_shape.push_back(t.size(nd - 1 - i));
    }
    // Pad the innermost dim of the reversed buffer by one so strides are not packed either.
    Shape padded = rev_shape;
    padded[nd - 1] += 1;
    Tensor big = Tensor::zeros(padded);
    Tensor rev_view = big.narrow(nd - 1, 0, rev_shape[nd - 1]);
    // Fill rev_view[i_{n-1}, ..., i_0] = t[i_0, ..., i_{n-1}].
    std::vector<float> v = t.contiguous().to_vector();
    Tensor back = rev_view.permute(rev);  // shape == t.shape()
    float* base = static_cast<float*>(back.data_ptr());
    std::vector<int64_t> idx(nd, 0);
    for (int64_t flat = 0; flat < t.numel(); ++flat) {
        int64_t off = 0;
        for (int d = 0; d < nd; ++d) off += idx[d] * back.stride(d);
        base[off] = v[static_cast<size_t>(flat)];
        for (int d = nd - 1; d >= 0; --d) {
            if (++idx[d] < t.size(d)) break;
            idx[d] = 0;
        }
    }
    return back;
}

struct Diff {
    double max_abs = 0;
    double max_rel = 0;  // |a-b| / max(|b|, floor)
    int64_t worst = -1;
};

// Largest differences between two tensors of one shape; rel uses `floor` to avoid
// dividing by values near zero.
inline Diff compare(const Tensor& got, const Tensor& want, double floor = 1e-3) {
    std::vector<float> a = got.to_vector(), b = want.to_vector();
    Diff d;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        double e = std::fabs(static_cast<double>(a[i]) - b[i]);
        if (std::isnan(a[i]) != std::isnan(b[i])) e = INFINITY;
        double r = e / std::max(std::fabs(static_cast<double>(b[i])), floor);
        if (e > d.max_abs) {
            d.max_abs = e;
            d.worst = static_cast<int64_t>(i);
        }
        d.max_rel = std::max(d.max_rel, r);
    }
    return d;
}

// EXPECT that got matches want in shape and within `atol + rtol * |want|` everywhere.
inline void expect_close(const Tensor& got, const Tensor& want, double atol, double rtol,
                         const std::string& what = "") {
    ASSERT_EQ(got.shape(), want.shape())
        << what << ": got " << got.describe() << ", want " << want.describe();
    std::vector<float> a = got.to_vector(), b = want.to_vector();
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < a.size(); ++i) {
        double tol = atol + rtol * std::fabs(static_cast<double>(b[i]));
        bool ok = std::fabs(static_cast<double>(a[i]) - b[i]) <= tol ||
                  (std::isnan(a[i]) && std::isnan(b[i])) || (a[i] == b[i]);
        if (!ok) {
            if (first < 0) first = static_cast<int64_t>(i);
            ++bad;
        }
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size()
                      << " values out of tolerance (atol " << atol << ", rtol " << rtol
                      << "); first at flat index " << first << ": got "
                      << (first >= 0 ? a[first] : 0.f) << ", want "
                      << (first >= 0 ? b[first] : 0.f);
}

// Every kernel family this machine and build can run, lowest first. Tests loop over them
// with IsaScope so a single run checks the generic, AVX2 and AVX-512 paths.
inline std::vector<Isa> available_isas() {
    std::vector<Isa> out;
    for (int i = 0; i <= static_cast<int>(best_supported_isa()); ++i)
        out.push_back(static_cast<Isa>(i));
    return out;
}

class IsaScope {
  public:
    explicit IsaScope(Isa isa) : saved_(active_isa()) { set_isa(isa); }
    ~IsaScope() { set_isa(saved_); }

  private:
    Isa saved_;
};

inline std::string fixtures_dir() {
    return SD_FIXTURES_DIR;
}

// This process's resident set (/proc/self/statm), in bytes.
inline size_t resident_bytes() {
    long pages = 0, resident = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
    return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace sd::test
