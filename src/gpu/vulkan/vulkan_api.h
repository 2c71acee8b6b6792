// The Vulkan loader, opened at run time, and the functions this engine calls, loaded once.
// A machine without libvulkan.so.1 gets a reason (vulkan_api_error), not a failed start.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace sd::gpu {

// Instance-level functions (loaded with vkGetInstanceProcAddr after vkCreateInstance).
#define SD_VULKAN_INSTANCE_FUNCTIONS(X)         \
    X(vkDestroyInstance)                        \
    X(vkEnumeratePhysicalDevices)               \
    X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceMemoryProperties)      \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkEnumerateDeviceExtensionProperties)     \
    X(vkCreateDevice)                           \
    X(vkGetDeviceProcAddr)

// Device-level functions (loaded with vkGetDeviceProcAddr for each device).
#define SD_VULKAN_DEVICE_FUNCTIONS(X) \
    X(vkDestroyDevice)                \
    X(vkGetDeviceQueue)               \
    X(vkCreateBuffer)                 \
    X(vkDestroyBuffer)                \
    X(vkGetBufferMemoryRequirements)  \
    X(vkAllocateMemory)               \
    X(vkFreeMemory)                   \
    X(vkBindBufferMemory)             \
    X(vkMapMemory)                    \
    X(vkUnmapMemory)                  \
    X(vkFlushMappedMemoryRanges)      \
    X(vkInvalidateMappedMemoryRanges) \
    X(vkCreateShaderModule)           \
    X(vkDestroyShaderModule)          \
    X(vkCreateDescriptorSetLayout)    \
    X(vkDestroyDescriptorSetLayout)   \
    X(vkCreatePipelineLayout)         \
    X(vkDestroyPipelineLayout)        \
    X(vkCreateComputePipelines)       \
    X(vkDestroyPipeline)              \
    X(vkCreateDescriptorPool)         \
    X(vkDestroyDescriptorPool)        \
    X(vkResetDescriptorPool)          \
    X(vkAllocateDescriptorSets)       \
    X(vkUpdateDescriptorSets)         \
    X(vkCreateCommandPool)            \
    X(vkDestroyCommandPool)           \
    X(vkAllocateCommandBuffers)       \
    X(vkBeginCommandBuffer)           \
    X(vkEndCommandBuffer)             \
    X(vkResetCommandBuffer)           \
    X(vkCmdBindPipeline)              \
    X(vkCmdBindDescriptorSets)        \
    X(vkCmdPushConstants)             \
    X(vkCmdDispatch)                  \
    X(vkCmdPipelineBarrier)           \
    X(vkCmdCopyBuffer)                \
    X(vkQueueSubmit)                  \
    X(vkCreateFence)                  \
    X(vkDestroyFence)                 \
    X(vkWaitForFences)                \
    X(vkResetFences)                  \
    X(vkCreateQueryPool)              \
    X(vkDestroyQueryPool)             \
    X(vkCmdResetQueryPool)            \
    X(vkCmdWriteTimestamp)            \
    X(vkGetQueryPoolResults)          \
    X(vkCreateBufferView)             \
    X(vkDestroyBufferView)

struct VulkanInstanceFunctions {
#define SD_VULKAN_MEMBER(name) PFN_##name name = nullptr;
    SD_VULKAN_INSTANCE_FUNCTIONS(SD_VULKAN_MEMBER)
    // Vulkan 1.1, null on a 1.0 instance (the subgroup properties then stay unknown).
    PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2 = nullptr;
    // Vulkan 1.1 too: with VK_EXT_memory_budget, how much of a heap this process may still use.
    PFN_vkGetPhysicalDeviceMemoryProperties2 vkGetPhysicalDeviceMemoryProperties2 = nullptr;
};
struct VulkanDeviceFunctions {
    SD_VULKAN_DEVICE_FUNCTIONS(SD_VULKAN_MEMBER)
#undef SD_VULKAN_MEMBER
};

// The loader's entry point and the global functions, or nullptr (with vulkan_api_error()
// saying why) where libvulkan.so.1 cannot be opened. Opened once per process.
struct VulkanLoader {
    PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
    PFN_vkCreateInstance create_instance = nullptr;
    PFN_vkEnumerateInstanceVersion enumerate_instance_version = nullptr;  // may be null (1.0)
};
const VulkanLoader* vulkan_loader();
const std::string& vulkan_api_error();

void load_instance_functions(VkInstance instance, VulkanInstanceFunctions& out);
void load_device_functions(const VulkanInstanceFunctions& vk, VkDevice device,
                           VulkanDeviceFunctions& out);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for its code.
const char* vk_result_name(VkResult result);

// Throws sd::Error "WHERE: CALL failed: RESULT (code)" unless result is VK_SUCCESS; WHERE is a
// device's label() ("Vulkan device vulkan0") for the calls on one.
void vk_check(VkResult result, const char* call, const std::string& where = "Vulkan");

}  // namespace sd::gpu
