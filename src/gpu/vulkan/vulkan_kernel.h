// A compute shader made into a pipeline: its storage buffers (bindings 0..n-1 of set 0, in
// order) and its push constants, as the shader declares them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "gpu/vulkan/vulkan_api.h"

namespace sd::gpu {

class VulkanDevice;

// How a shader binds one of its buffers.
enum class Binding : uint8_t {
    Storage,     // a storage buffer, read or written
    TexelF32,    // read through a uniform texel buffer of R32_SFLOAT (f32 values)
    TexelU32,    // R32_UINT: a weight's bytes as 32-bit words
    TexelU32x4,  // R32G32B32A32_UINT: the same, 16 bytes a fetch
};
constexpr uint32_t kMaxBindings = 8;

// What a shader is: its name (for errors and the device's pipeline cache), its SPIR-V words
// (vulkan_shaders.h), how many buffers it binds (bindings 0..buffers-1, each as `bindings`
// says: storage buffers unless given) and how many bytes of push constants it reads.
//
// Texel buffers are how a CPU-class device reads fast: lavapipe fetches a texel for all SIMD
// lanes with one gather, where a storage-buffer read is a loop over the lanes.
struct ShaderSpec {
    const char* name;
    std::span<const uint32_t> spirv;
    uint32_t buffers;
    uint32_t push_bytes;
    std::array<Binding, kMaxBindings> bindings{};
};

VkDescriptorType descriptor_type(Binding b);

class VulkanKernel {
  public:
    VulkanKernel(const VulkanDevice& device, const ShaderSpec& spec);
    ~VulkanKernel();
    VulkanKernel(const VulkanKernel&) = delete;
    VulkanKernel& operator=(const VulkanKernel&) = delete;

    const ShaderSpec& spec() const { return spec_; }
    VkPipeline pipeline() const { return pipeline_; }
    VkPipelineLayout layout() const { return layout_; }
    VkDescriptorSetLayout set_layout() const { return set_layout_; }

  private:
    void destroy() noexcept;
    const VulkanDevice& device_;
    ShaderSpec spec_;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipeline_ = VK_NULL_HANDLE;
};

}  // namespace sd::gpu
