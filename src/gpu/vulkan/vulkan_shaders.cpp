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

namespace sd::gpu::shaders {

const ShaderSpec& linear_f32() {
    static const ShaderSpec spec{"linear_f32", spirv_linear_f32(), 4, sizeof(LinearParams)};
    return spec;
}

}  // namespace sd::gpu::shaders
