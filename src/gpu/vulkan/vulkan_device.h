// A Vulkan device (one of gpu/devices.h's vulkan_devices()) opened as a logical device with
// one compute queue, and buffers in its memory.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gpu/devices.h"
#include "gpu/vulkan/vulkan_api.h"
#include "gpu/vulkan/vulkan_kernel.h"

namespace sd::gpu {

class VulkanKernel;
struct ShaderSpec;

// One logical device with one compute queue. Shared by the buffers, kernels and recorders
// made on it, which keep it alive.
class VulkanDevice {
  public:
    // Opens "vulkanN" (any case). Throws sd::Error naming the device and the devices there are.
    static std::shared_ptr<VulkanDevice> open(const std::string& name);
    ~VulkanDevice();
    VulkanDevice(const VulkanDevice&) = delete;
    VulkanDevice& operator=(const VulkanDevice&) = delete;

    const std::string& name() const { return name_; }
    const std::string& label() const { return label_; }  // "Vulkan device vulkan0", for errors
    const VulkanDeviceFunctions& vk() const { return vk_; }
    VkDevice handle() const { return device_; }
    VkQueue queue() const { return queue_; }
    uint32_t queue_family() const { return queue_family_; }
    const VkPhysicalDeviceLimits& limits() const { return limits_; }
    // A CPU-class device (lavapipe, SwiftShader): its invocations are SIMD lanes of CPU
    // cores, which shared memory and barriers slow down rather than speed up.
    bool cpu() const { return cpu_; }
    // Lanes of a compute subgroup with shuffles (basic and shuffle operations); 0 without.
    uint32_t subgroup_size() const { return subgroup_size_; }
    // Whether a submission or wait has reported VK_ERROR_DEVICE_LOST: nothing more runs on
    // this logical device (a stream opens the device anew, gpu::settle).
    bool lost() const { return lost_.load(); }
    void mark_lost() { lost_.store(true); }
    // Nanoseconds a timestamp tick; 0 where the compute queue has no timestamps.
    double timestamp_ns() const { return timestamp_ns_; }

    // A memory type index allowed by type_bits: device-local first, or host-visible and
    // coherent when `host` is set. Throws sd::Error naming the device when there is none.
    uint32_t memory_type(uint32_t type_bits, bool host) const;

    // The compute pipeline of a shader, built on first use and kept while the device lives.
    const VulkanKernel& kernel(const ShaderSpec& spec);

  private:
    VulkanDevice() = default;
    std::shared_ptr<struct VulkanInstance> instance_;
    std::string name_;
    std::string label_;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties memory_{};
    VkPhysicalDeviceLimits limits_{};
    bool cpu_ = false;
    uint32_t subgroup_size_ = 0;
    double timestamp_ns_ = 0;
    std::atomic<bool> lost_{false};
    VkDevice device_ = VK_NULL_HANDLE;
    VulkanDeviceFunctions vk_;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    std::mutex kernels_mutex_;
    std::map<std::string, std::unique_ptr<VulkanKernel>> kernels_;
};

// A buffer and its memory. Device memory is read and written through a CommandRecorder's
// counted transfers; host memory (staging) is mapped for the life of the buffer.
class VulkanBuffer {
  public:
    enum class Memory { Device, Host };
    VulkanBuffer(std::shared_ptr<VulkanDevice> device, size_t bytes, Memory memory);
    ~VulkanBuffer();
    VulkanBuffer(VulkanBuffer&& other) noexcept;
    VulkanBuffer& operator=(VulkanBuffer&& other) noexcept;
    VulkanBuffer(const VulkanBuffer&) = delete;
    VulkanBuffer& operator=(const VulkanBuffer&) = delete;

    size_t size() const { return size_; }
    VkBuffer handle() const { return buffer_; }
    const VulkanDevice& device() const { return *device_; }
    // The mapped bytes of a host buffer (nullptr for device memory).
    std::byte* mapped() const { return mapped_; }
    // The whole buffer as a uniform texel buffer of `binding`'s format (made on first use,
    // kept with the buffer). Throws sd::Error naming the device's texel limit for a buffer
    // past it.
    VkBufferView texel_view(Binding binding) const;

  private:
    void release() noexcept;
    std::shared_ptr<VulkanDevice> device_;
    size_t size_ = 0;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    std::byte* mapped_ = nullptr;
    // One view a texel format (Binding::TexelF32 .. TexelU32x4).
    mutable std::array<VkBufferView, 3> views_{};
};

}  // namespace sd::gpu
