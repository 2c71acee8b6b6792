#include "gpu/vulkan/vulkan_shaders.h"

// sd_spirv_NAME .. sd_spirv_NAME_end bound shaders/NAME.comp's SPIR-V (4-byte aligned).
#define SD_EMBEDDED_SPIRV(name)                                                                 \
    extern "C" const uint32_t sd_spirv_##name[], sd_spirv_##name##_end[];                       \
    namespace {                                                                                 \
    std::span<const uint32_t> spirv_##name() {                                                  \
        return {sd_spirv_##name, static_cast<size_t>(sd_spirv_##name##_end - sd_spirv_##name)}; \
    }                                                                                           \
    }

SD_EMBEDDED_SPIRV(linear_f32)
SD_EMBEDDED_SPIRV(linear_f16)
SD_EMBEDDED_SPIRV(linear_bf16)
SD_EMBEDDED_SPIRV(linear_q8_0)
SD_EMBEDDED_SPIRV(linear_q4_0)
SD_EMBEDDED_SPIRV(linear_q4_K)
SD_EMBEDDED_SPIRV(linear_q5_K)
SD_EMBEDDED_SPIRV(linear_q6_K)
SD_EMBEDDED_SPIRV(unary)
SD_EMBEDDED_SPIRV(binary)
SD_EMBEDDED_SPIRV(norm)
SD_EMBEDDED_SPIRV(attention_d128)
SD_EMBEDDED_SPIRV(attention_d512)

namespace sd::gpu::shaders {

const ShaderSpec* linear(DType weight) {
    constexpr uint32_t push = sizeof(LinearParams);
    static const ShaderSpec f32{"linear_f32", spirv_linear_f32(), 4, push};
    static const ShaderSpec f16{"linear_f16", spirv_linear_f16(), 4, push};
    static const ShaderSpec bf16{"linear_bf16", spirv_linear_bf16(), 4, push};
    static const ShaderSpec q8_0{"linear_q8_0", spirv_linear_q8_0(), 4, push};
    static const ShaderSpec q4_0{"linear_q4_0", spirv_linear_q4_0(), 4, push};
    static const ShaderSpec q4_K{"linear_q4_K", spirv_linear_q4_K(), 4, push};
    static const ShaderSpec q5_K{"linear_q5_K", spirv_linear_q5_K(), 4, push};
    static const ShaderSpec q6_K{"linear_q6_K", spirv_linear_q6_K(), 4, push};
    switch (weight) {
        case DType::F32:
            return &f32;
        case DType::F16:
            return &f16;
        case DType::BF16:
            return &bf16;
        case DType::Q8_0:
            return &q8_0;
        case DType::Q4_0:
            return &q4_0;
        case DType::Q4_K:
            return &q4_K;
        case DType::Q5_K:
            return &q5_K;
        case DType::Q6_K:
            return &q6_K;
        default:
            return nullptr;
    }
}

const ShaderSpec& unary() {
    static const ShaderSpec spec{"unary", spirv_unary(), 2, sizeof(UnaryParams)};
    return spec;
}

const ShaderSpec& binary() {
    static const ShaderSpec spec{"binary", spirv_binary(), 3, sizeof(BinaryParams)};
    return spec;
}

const ShaderSpec& norm() {
    static const ShaderSpec spec{"norm", spirv_norm(), 4, sizeof(NormParams)};
    return spec;
}

const ShaderSpec* attention(uint32_t d, uint32_t dv) {
    static const ShaderSpec d128{"attention_d128", spirv_attention_d128(), 5,
                                 sizeof(AttentionParams)};
    static const ShaderSpec d512{"attention_d512", spirv_attention_d512(), 5,
                                 sizeof(AttentionParams)};
    if (d <= 128 && dv <= 128) return &d128;
    if (d <= 512) return &d512;
    return nullptr;
}

}  // namespace sd::gpu::shaders
