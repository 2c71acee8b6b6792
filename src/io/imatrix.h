// The importance matrix: per weight matrix, the mean square of each input column seen during
// generation (for a Linear [out, in] the `in` activations; for a Conv2d [O, C, KH, KW] the
// C * KH * KW im2col columns), collected while enabled and used by -M convert to weight the
// quantization error of each weight column (llama.cpp's quant_weights).
//
// One process-wide store, as the reference C API (enable_imatrix_collection, save_imatrix,
// load_imatrix) has no context to hang it on. Files: the legacy llama.cpp /
// stable-diffusion.cpp layout (what stable-diffusion.cpp writes; little-endian int32 entry
// count; per entry int32 name length, the name, int32 ncall, int32 value count, float32 values
// = sum of squares / count * ncall; then int32 the chunks collected), or, for a path ending in
// ".gguf", llama.cpp's GGUF imatrix ("<name>.in_sum2" and "<name>.counts" tensors,
// general.type "imatrix"). load() recognises either by content.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace sd {

class Tensor;
struct Conv2dOptions;

namespace imatrix {

namespace detail {
extern std::atomic<bool> g_collecting;
}

// Whether Linear / Conv2d should record their inputs: one relaxed atomic load.
inline bool collecting() {
    return detail::g_collecting.load(std::memory_order_relaxed);
}
void set_collecting(bool on);

// Records the input x [..., in] of the weight matrix `name` (x's last dimension is the
// matrix's row length). Any plain dtype and strides.
void record_linear(const std::string& name, const Tensor& x);
// Records the input x [B, C, H, W] of the convolution `name` with a kh x kw kernel: column
// c * kh * kw + ky * kw + kx gets the squares of the values that meet kernel tap (ky, kx),
// zero padding included, one row per output position.
void record_conv2d(const std::string& name, const Tensor& x, const Conv2dOptions& options,
                   int64_t kh, int64_t kw);
// Adds `rows` rows of sums of squares (sum_sq[j] over all rows for column j).
void add(const std::string& name, const double* sum_sq, int64_t cols, int64_t rows);

// Writes the collected entries (those with data in every column) to `path`; throws
// sd::Error naming the file when it cannot. Returns the number of entries written.
size_t save(const std::string& path);
// Reads `path` and adds its entries to the store (several files accumulate; an entry whose
// size differs from the one held replaces it, with a warning); throws sd::Error naming the
// file and the entry on a malformed file, leaving the store as it was.
size_t load(const std::string& path);
void clear();
size_t entry_count();

// The importance of each column of `name` (any positive scale), or empty when the store has
// no entry of that name.
std::vector<float> importance(const std::string& name);

}  // namespace imatrix
}  // namespace sd
