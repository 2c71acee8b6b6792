// A restricted unpickler for the pickles that torch.save writes (protocols 0-5). It never
// imports or calls anything: GLOBAL and STACK_GLOBAL resolve only to an allow-list
// (collections.OrderedDict, the torch._utils tensor/parameter rebuild functions, the torch
// storage classes and dtypes), REDUCE applies only those, and persistent ids become storage
// references that the caller maps to the checkpoint's data entries. Everything else is an
// sd::Error naming the file and the byte offset in the pickle.
//
// Objects live in an arena owned by the Pickle; containers hold pointers into it, so shared
// and even cyclic references are fine (consumers must bound their own traversal).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

namespace sd::pickle {

enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    Float,
    String,
    Bytes,
    Tuple,
    List,
    Set,
    Dict,
    Global,   // an allow-listed class or function
    Storage,  // a persistent id ('storage', type, key, location, numel)
    Tensor,   // the result of a tensor rebuild function
};

// The allow-listed globals.
enum class Global : uint8_t {
    OrderedDict,
    RebuildTensor,
    RebuildTensorV2,
    RebuildTensorV3,
    RebuildParameter,
    RebuildParameterWithState,
    StorageType,  // torch.FloatStorage, torch.UntypedStorage, ...
    DType,        // torch.float16, torch.float8_e4m3fn, ...
};

// Element types of storages and tensors.
enum class ElemType : uint8_t {
    F32,
    F16,
    BF16,
    F64,
    I64,
    I32,
    I16,
    I8,
    U8,
    Bool,
    F8_E4M3,
    F8_E5M2
};

size_t elem_size(ElemType t);
const char* elem_name(ElemType t);

struct Object {
    Kind kind = Kind::None;
    Global global = Global::OrderedDict;  // Global
    ElemType elem = ElemType::U8;         // Global StorageType/DType
    uint32_t index = 0;                   // Storage, Tensor: index into Pickle's tables
    int64_t integer = 0;                  // Int, Bool
    double real = 0.0;                    // Float
    std::string text;                     // String, Bytes; Global: "module.name"
    // Tuple, List, Set: the elements. Dict: key0, value0, key1, value1, ... in insertion
    // order (a repeated key is kept twice; readers decide what that means).
    std::vector<const Object*> items;
};

struct StorageInfo {
    ElemType elem;
    std::string key;       // the data entry is "<archive>/data/<key>"
    std::string location;  // "cpu", "cuda:0", ...
    int64_t numel;
};

struct TensorInfo {
    uint32_t storage;  // index into Pickle::storages()
    ElemType elem;     // the storage's type, or the dtype argument of _rebuild_tensor_v3
    int64_t offset;    // in elements
    std::vector<int64_t> size;
    std::vector<int64_t> stride;
};

// Limits that keep memory bounded whatever the input claims.
struct Limits {
    size_t max_values = size_t{1} << 22;  // objects created plus references stored
    size_t max_marks = 1000;              // nesting of MARK
};

class Pickle {
  public:
    const Object& root() const { return *root_; }
    const std::vector<StorageInfo>& storages() const { return storages_; }
    const std::vector<TensorInfo>& tensors() const { return tensors_; }

  private:
    friend class Unpickler;
    std::deque<Object> objects_;
    std::vector<StorageInfo> storages_;
    std::vector<TensorInfo> tensors_;
    const Object* root_ = nullptr;
};

// Unpickles `data`. Errors read "PATH: NAME byte N: what is wrong", where PATH is the file and
// NAME the pickle inside it (e.g. "archive/data.pkl").
Pickle read_pickle(std::span<const uint8_t> data, const std::string& path, const std::string& name,
                   const Limits& limits = {});

}  // namespace sd::pickle
