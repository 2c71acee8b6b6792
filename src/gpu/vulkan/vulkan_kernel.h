// A compute shader made into a pipeline: its storage buffers (bindings 0..n-1 of set 0, in
// order) and its push constants, as the shader declares them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "gpu/vulkan/vulkan_api.h"

namespace sd::gpu {

class VulkanDevice;

// What a shader is: its name (for errors and the device's pipeline cache), its SPIR-V words
// (vulkan_shaders.h), how many storage buffers it binds and how many bytes of push constants
// it reads.
struct ShaderSpec {
    const char* name;
    std::span<const uint32_t> spirv;
    uint32_t buffers;
    uint32_t push_bytes;
};

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
