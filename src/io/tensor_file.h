// What a model file holds once opened: its tensors (by name, in file order) and its
// metadata. Tensors view the mapped file wherever dtype and layout allow, so opening a
// multi-gigabyte checkpoint touches only its header.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tensor/tensor.h"

namespace sd {

// Element types found in files that the engine has no dtype for; load() converts them
// (f64 -> f32, integers -> i32, bool -> i32, f8 -> f16).
enum class RawType { None, F64, I64, I16, I8, U8, Bool, F8_E4M3, F8_E5M2 };

struct TensorRecord {
    std::string name;
    Shape shape;                       // PyTorch order, outermost first
    DType dtype;                       // what load() returns
    RawType raw = RawType::None;       // when set, the bytes hold this type and load() converts
    std::shared_ptr<Storage> storage;  // the bytes in the file
    int64_t offset = 0;  // first element, counted in stored elements from the storage start
    Strides strides;     // in stored elements; contiguous for every format but .ckpt

    // The tensor: a view of the file when the bytes allow it, otherwise a converted copy.
    Tensor load() const;
    // Bytes the tensor's elements take in the file.
    size_t file_bytes() const;
};

// A GGUF-style metadata value: scalars, strings, and arrays of them.
struct MetadataValue;
using MetadataArray = std::vector<MetadataValue>;
struct MetadataValue {
    std::variant<int64_t, uint64_t, double, bool, std::string, MetadataArray> value;
    std::string to_string() const;  // short text form, for listings and logs
};

struct TensorFile {
    std::string path;
    std::string format;  // "safetensors", "gguf", "ckpt", "diffusers"
    std::vector<TensorRecord> tensors;
    std::map<std::string, MetadataValue> metadata;

    const TensorRecord* find(const std::string& name) const;
};

// Opens any supported file, recognised by its content (not its extension): a GGUF file,
// a safetensors file, a "*.safetensors.index.json" shard index, a PyTorch zip checkpoint,
// or a diffusers folder. Throws sd::Error naming the file and the problem.
TensorFile open_tensor_file(const std::string& path);

TensorFile read_safetensors(const std::string& path);
TensorFile read_safetensors_index(const std::string& path);
TensorFile read_gguf(const std::string& path);
// A PyTorch zip checkpoint (.ckpt/.pt/.pth), through a restricted unpickler that only
// rebuilds tensors; tensors inside a "state_dict" entry, nested dicts flattened with '.'.
TensorFile read_torch_checkpoint(const std::string& path);

}  // namespace sd
