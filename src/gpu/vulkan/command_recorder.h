// Records a sequence of transfers and dispatches into one command buffer and submits it
// once: a network's dispatches cost one queue submission, not one each.
//
// Ordering: every recorded step waits for the one before (a global compute + transfer memory
// barrier between steps), which is what a network's chain of ops needs; independent steps
// that could overlap are a later refinement. Uploads go through host-visible staging buffers
// kept until the submission completes; downloads land in the caller's memory when submit()
// returns. Every byte that crosses between host and device is counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "gpu/vulkan/dispatch_profile.h"
#include "gpu/vulkan/vulkan_device.h"
#include "gpu/vulkan/vulkan_kernel.h"

namespace sd::gpu {

struct RecorderStats {
    int64_t submissions = 0;
    int64_t dispatches = 0;
    int64_t bytes_uploaded = 0;
    int64_t bytes_downloaded = 0;
};

class CommandRecorder {
  public:
    explicit CommandRecorder(std::shared_ptr<VulkanDevice> device);
    ~CommandRecorder();
    CommandRecorder(const CommandRecorder&) = delete;
    CommandRecorder& operator=(const CommandRecorder&) = delete;

    // Host bytes into a buffer at `offset` (staged; the bytes are copied now).
    void upload(VulkanBuffer& dst, const void* src, size_t bytes, size_t offset = 0);
    // A buffer's bytes at `offset` into `dst`, written when submit() returns; dst must live
    // until then.
    void download(const VulkanBuffer& src, void* dst, size_t bytes, size_t offset = 0);
    // One dispatch of `groups` workgroups, the buffers bound in order, push constants copied.
    void dispatch(const VulkanKernel& kernel, std::initializer_list<const VulkanBuffer*> buffers,
                  const void* push, size_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1,
                  uint32_t groups_z = 1);

    // Submits what was recorded (nothing when empty), waits for it, completes the downloads
    // and starts a new recording. Throws sd::Error naming the device when the device fails
    // (lost, out of memory); the recorder is then empty and usable again.
    void submit();

    const RecorderStats& stats() const { return stats_; }
    // Host staging bytes held by the recording until its submission.
    size_t staged_bytes() const { return staged_bytes_; }
    bool empty() const { return !recording_; }
    VulkanDevice& device() const { return *device_; }
    const std::shared_ptr<VulkanDevice>& shared_device() const { return device_; }
    // The device time by shader of the submissions so far, on SD_VULKAN_PROFILE runs (null
    // otherwise).
    const DispatchProfile* profile() const { return profile_.get(); }

  private:
    void begin_if_needed();
    void barrier();
    VkDescriptorSet allocate_set(const VulkanKernel& kernel);
    void reset() noexcept;

    std::shared_ptr<VulkanDevice> device_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer commands_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    std::vector<VkDescriptorPool> descriptor_pools_;
    size_t pool_in_use_ = 0;
    bool recording_ = false;
    bool has_steps_ = false;

    struct Download {
        VulkanBuffer staging;
        void* dst;
        size_t bytes;
    };
    std::vector<VulkanBuffer> uploads_;
    std::vector<Download> downloads_;
    size_t staged_bytes_ = 0;
    RecorderStats stats_;
    std::unique_ptr<DispatchProfile> profile_;  // SD_VULKAN_PROFILE runs only
};

}  // namespace sd::gpu
