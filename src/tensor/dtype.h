// Element types. The numeric values are GGUF's type ids (ggml_type), so a GGUF file's
// tensor type maps to a DType without a table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sd {

enum class DType : int32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    IQ4_NL = 20,
    IQ4_XS = 23,
    I32 = 26,
    BF16 = 30,
};

struct DTypeInfo {
    DType type;
    const char* name;    // "f32", "q4_K", ...: the names GGUF tools and --type use
    int64_t block_size;  // values per block (1 for plain types)
    size_t type_size;    // bytes per block
    bool is_quantized;   // a block type: only whole rows of whole blocks can be addressed
};

const DTypeInfo& dtype_info(DType type);
inline const char* dtype_name(DType type) {
    return dtype_info(type).name;
}
inline int64_t block_size(DType type) {
    return dtype_info(type).block_size;
}
inline bool is_quantized(DType type) {
    return dtype_info(type).is_quantized;
}

// Bytes taken by n values (n a multiple of the block size).
inline size_t row_bytes(DType type, int64_t n) {
    const DTypeInfo& info = dtype_info(type);
    return static_cast<size_t>(n / info.block_size) * info.type_size;
}

// Every dtype the engine knows, in enum order.
const DType* all_dtypes(size_t* count);
// From a GGUF type id or a name (case-insensitive: "q4_k" == "q4_K"); nullopt if unknown.
std::optional<DType> dtype_from_gguf_id(int64_t id);
std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace sd
