#include "tensor/dtype.h"

#include <strings.h>

#include <array>
#include <string>

#include "base/error.h"

namespace sd {
namespace {

// Block sizes and byte sizes as GGUF lays the blocks out (see quant_blocks.h).
constexpr DTypeInfo kInfos[] = {
    {DType::F32, "f32", 1, 4, false},        {DType::F16, "f16", 1, 2, false},
    {DType::Q4_0, "q4_0", 32, 18, true},     {DType::Q4_1, "q4_1", 32, 20, true},
    {DType::Q5_0, "q5_0", 32, 22, true},     {DType::Q5_1, "q5_1", 32, 24, true},
    {DType::Q8_0, "q8_0", 32, 34, true},     {DType::Q2_K, "q2_K", 256, 84, true},
    {DType::Q3_K, "q3_K", 256, 110, true},   {DType::Q4_K, "q4_K", 256, 144, true},
    {DType::Q5_K, "q5_K", 256, 176, true},   {DType::Q6_K, "q6_K", 256, 210, true},
    {DType::IQ4_NL, "iq4_nl", 32, 18, true}, {DType::IQ4_XS, "iq4_xs", 256, 136, true},
    {DType::I32, "i32", 1, 4, false},        {DType::BF16, "bf16", 1, 2, false},
};
constexpr size_t kCount = sizeof(kInfos) / sizeof(kInfos[0]);

const DType* dtype_list() {
    static DType list[kCount];
    static bool init = [] {
        for (size_t i = 0; i < kCount; ++i) list[i] = kInfos[i].type;
        return true;
    }();
    (void)init;
    return list;
}

}  // namespace

const DTypeInfo& dtype_info(DType type) {
    // Indexed by the GGUF id, which stays below 32.
    static const auto table = [] {
        std::array<const DTypeInfo*, 32> t{};
        for (const DTypeInfo& info : kInfos) t[static_cast<size_t>(info.type)] = &info;
        return t;
    }();
    auto id = static_cast<uint32_t>(type);
    if (id >= table.size() || !table[id]) fail("unknown dtype id %d", static_cast<int>(type));
    return *table[id];
}

const DType* all_dtypes(size_t* count) {
    *count = kCount;
    return dtype_list();
}

std::optional<DType> dtype_from_gguf_id(int64_t id) {
    for (const DTypeInfo& info : kInfos) {
        if (static_cast<int64_t>(info.type) == id) return info.type;
    }
    return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const DTypeInfo& info : kInfos) {
        std::string_view candidate(info.name);
        if (candidate.size() == name.size() &&
            strncasecmp(candidate.data(), name.data(), name.size()) == 0) {
            return info.type;
        }
    }
    return std::nullopt;
}

}  // namespace sd
