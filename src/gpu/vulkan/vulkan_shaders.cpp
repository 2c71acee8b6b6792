#include "gpu/vulkan/vulkan_shaders.h"

// sd_spirv_NAME .. sd_spirv_NAME_end bound shaders/NAME.comp's SPIR-V (4-byte aligned).
#define SD_EMBEDDED_SPIRV(name)                                                                 \
    extern "C" const uint32_t sd_spirv_##name[], sd_spirv_##name##_end[];                       \
    namespace {                                                                                 \
    std::span<const uint32_t> spirv_##name() {                                                  \
        return {sd_spirv_##name, static_cast<size_t>(sd_spirv_##name##_end - sd_spirv_##name)}; \
    }                                                                                           \
    }

// The GEMM shaders, one a weight dtype: X(dtype name, DType).
#define SD_GEMM_WEIGHTS(X) \
    X(f32, F32)            \
    X(f16, F16)            \
    X(bf16, BF16)          \
    X(q8_0, Q8_0)          \
    X(q4_0, Q4_0)          \
    X(q4_K, Q4_K)          \
    X(q5_K, Q5_K)          \
    X(q6_K, Q6_K)
#define SD_GEMM_SPIRV(name, dtype)           \
    SD_EMBEDDED_SPIRV(linear_##name)         \
    SD_EMBEDDED_SPIRV(linear_##name##_lanes) \
    SD_EMBEDDED_SPIRV(conv2d_##name) SD_EMBEDDED_SPIRV(conv2d_##name##_lanes)
SD_GEMM_WEIGHTS(SD_GEMM_SPIRV)
SD_EMBEDDED_SPIRV(unary)
SD_EMBEDDED_SPIRV(rope)
SD_EMBEDDED_SPIRV(peak_fma)
SD_EMBEDDED_SPIRV(binary)
SD_EMBEDDED_SPIRV(norm)
SD_EMBEDDED_SPIRV(attention_d128)
SD_EMBEDDED_SPIRV(attention_d128_lanes)
SD_EMBEDDED_SPIRV(attention_d512)
SD_EMBEDDED_SPIRV(attention_d512_lanes)

namespace sd::gpu::shaders {

GemmTile gemm_tile(Blocking blocking) {
    // gemm_lanes.glsl: 8 lanes of ROWS = 16 rows by 8 columns each.
    return blocking == Blocking::Lanes ? GemmTile{16, 64} : GemmTile{64, 64};
}

namespace {
// The lanes GEMM shaders' bindings: x, the weight's words, bias, y, the weight's 16-byte texels.
constexpr std::array<Binding, kMaxBindings> kGemmLanesBindings = {
    Binding::TexelF32, Binding::TexelU32, Binding::TexelF32, Binding::Storage, Binding::TexelU32x4};
}  // namespace

const ShaderSpec* linear(DType weight, Blocking blocking) {
#define SD_LINEAR_CASE(name, dtype)                                                               \
    case DType::dtype: {                                                                          \
        static const ShaderSpec tiled{"linear_" #name, spirv_linear_##name(), 4,                  \
                                      sizeof(LinearParams)};                                      \
        static const ShaderSpec lanes{"linear_" #name "_lanes", spirv_linear_##name##_lanes(), 5, \
                                      sizeof(LinearParams), kGemmLanesBindings};                  \
        return blocking == Blocking::Lanes ? &lanes : &tiled;                                     \
    }
    switch (weight) {
        SD_GEMM_WEIGHTS(SD_LINEAR_CASE)
        default:
            return nullptr;
    }
#undef SD_LINEAR_CASE
}

const ShaderSpec* conv2d(DType weight, Blocking blocking) {
#define SD_CONV2D_CASE(name, dtype)                                                               \
    case DType::dtype: {                                                                          \
        static const ShaderSpec tiled{"conv2d_" #name, spirv_conv2d_##name(), 4,                  \
                                      sizeof(Conv2dParams)};                                      \
        static const ShaderSpec lanes{"conv2d_" #name "_lanes", spirv_conv2d_##name##_lanes(), 5, \
                                      sizeof(Conv2dParams), kGemmLanesBindings};                  \
        return blocking == Blocking::Lanes ? &lanes : &tiled;                                     \
    }
    switch (weight) {
        SD_GEMM_WEIGHTS(SD_CONV2D_CASE)
        default:
            return nullptr;
    }
#undef SD_CONV2D_CASE
}

const ShaderSpec& unary() {
    static const ShaderSpec spec{"unary", spirv_unary(), 2, sizeof(UnaryParams)};
    return spec;
}

const ShaderSpec& peak_fma() {
    static const ShaderSpec spec{"peak_fma", spirv_peak_fma(), 1, sizeof(PeakParams)};
    return spec;
}

const ShaderSpec& rope() {
    static const ShaderSpec spec{"rope", spirv_rope(), 3, sizeof(RopeParams)};
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

const ShaderSpec* attention(uint32_t d, uint32_t dv, Blocking blocking) {
    const bool lanes = blocking == Blocking::Lanes;
    static const ShaderSpec d128{"attention_d128", spirv_attention_d128(), 5,
                                 sizeof(AttentionParams)};
    // The lanes shaders read q, k, v and the mask as texel buffers.
    static constexpr std::array<Binding, kMaxBindings> lanes_bindings = {
        Binding::TexelF32, Binding::TexelF32, Binding::TexelF32, Binding::TexelF32,
        Binding::Storage};
    static const ShaderSpec d128_lanes{"attention_d128_lanes", spirv_attention_d128_lanes(), 5,
                                       sizeof(AttentionParams), lanes_bindings};
    static const ShaderSpec d512{"attention_d512", spirv_attention_d512(), 5,
                                 sizeof(AttentionParams)};
    static const ShaderSpec d512_lanes{"attention_d512_lanes", spirv_attention_d512_lanes(), 5,
                                       sizeof(AttentionParams), lanes_bindings};
    if (d <= 128 && dv <= 128) return lanes ? &d128_lanes : &d128;
    if (d <= 512) return lanes ? &d512_lanes : &d512;
    return nullptr;
}

}  // namespace sd::gpu::shaders
