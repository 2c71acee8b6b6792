// Writers for safetensors and GGUF. Tensors are produced one at a time through a callback
// (so converting a large model never holds more than one converted tensor), and the file
// appears under its name only once complete: it is written to "PATH.part" and renamed.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "io/tensor_file.h"

namespace sd {

struct OutputTensor {
    std::string name;
    DType dtype;
    Shape shape;                   // outermost first
    std::function<Tensor()> data;  // returns a tensor of exactly this dtype and shape
};

// safetensors holds the plain dtypes only (f32, f16, bf16, i32); metadata values are strings.
void write_safetensors(const std::string& path, const std::vector<OutputTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// GGUF v3 with `alignment` (a power of two; written as general.alignment when not 32).
void write_gguf(const std::string& path, const std::vector<OutputTensor>& tensors,
                const std::map<std::string, MetadataValue>& metadata = {}, uint64_t alignment = 32);

}  // namespace sd
