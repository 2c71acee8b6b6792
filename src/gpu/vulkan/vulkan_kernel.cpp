#include "gpu/vulkan/vulkan_kernel.h"

#include <vector>

#include "base/error.h"
#include "gpu/vulkan/vulkan_device.h"

namespace sd::gpu {

VkDescriptorType descriptor_type(Binding b) {
    return b == Binding::Storage ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                 : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
}

VulkanKernel::VulkanKernel(const VulkanDevice& device, const ShaderSpec& spec)
    : device_(device), spec_(spec) {
    const VulkanDeviceFunctions& vk = device.vk();
    const VkDevice dev = device.handle();
    SD_CHECK(!spec.spirv.empty() && spec.spirv[0] == 0x07230203u,
             "Vulkan shader %s: its SPIR-V is missing or not SPIR-V", spec.name);
    SD_CHECK(spec.buffers <= kMaxBindings, "Vulkan shader %s binds %u buffers, at most %u",
             spec.name, spec.buffers, kMaxBindings);
    VkShaderModule module = VK_NULL_HANDLE;
    try {
        std::vector<VkDescriptorSetLayoutBinding> bindings(spec.buffers);
        for (uint32_t i = 0; i < spec.buffers; ++i) {
            bindings[i].binding = i;
            bindings[i].descriptorType = descriptor_type(spec.bindings[i]);
            bindings[i].descriptorCount = 1;
            bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        }
        VkDescriptorSetLayoutCreateInfo set_info{};
        set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
        set_info.bindingCount = spec.buffers;
        set_info.pBindings = bindings.data();
        vk_check(vk.vkCreateDescriptorSetLayout(dev, &set_info, nullptr, &set_layout_),
                 "vkCreateDescriptorSetLayout", device.label());

        VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, spec.push_bytes};
        VkPipelineLayoutCreateInfo layout_info{};
        layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
        layout_info.setLayoutCount = 1;
        layout_info.pSetLayouts = &set_layout_;
        layout_info.pushConstantRangeCount = spec.push_bytes ? 1 : 0;
        layout_info.pPushConstantRanges = &push;
        vk_check(vk.vkCreatePipelineLayout(dev, &layout_info, nullptr, &layout_),
                 "vkCreatePipelineLayout", device.label());

        VkShaderModuleCreateInfo module_info{};

        module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        module_info.codeSize = spec.spirv.size_bytes();
        module_info.pCode = spec.spirv.data();
        vk_check(vk.vkCreateShaderModule(dev, &module_info, nullptr, &module),
                 "vkCreateShaderModule", device.label());
        VkComputePipelineCreateInfo info{};
        info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
        info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        info.stage.module = module;
        info.stage.pName = "main";
        info.layout = layout_;
        const VkResult r =
            vk.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline_);
        if (r != VK_SUCCESS) {
            pipeline_ = VK_NULL_HANDLE;
            fail("Vulkan device %s: shader %s: vkCreateComputePipelines failed: %s",
                 device.name().c_str(), spec.name, vk_result_name(r));
        }
        vk.vkDestroyShaderModule(dev, module, nullptr);
    } catch (...) {
        if (module) vk.vkDestroyShaderModule(dev, module, nullptr);
        destroy();
        throw;
    }
}

VulkanKernel::~VulkanKernel() {
    destroy();
}

void VulkanKernel::destroy() noexcept {
    const VulkanDeviceFunctions& vk = device_.vk();
    if (pipeline_) vk.vkDestroyPipeline(device_.handle(), pipeline_, nullptr);
    if (layout_) vk.vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
    if (set_layout_) vk.vkDestroyDescriptorSetLayout(device_.handle(), set_layout_, nullptr);
    pipeline_ = VK_NULL_HANDLE;
    layout_ = VK_NULL_HANDLE;
    set_layout_ = VK_NULL_HANDLE;
}

}  // namespace sd::gpu
