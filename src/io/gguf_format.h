// GGUF constants shared by the reader and the writer.
#pragma once

#include <cstdint>

namespace sd {

enum class GgufValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kGgufDefaultAlignment = 32;

}  // namespace sd
