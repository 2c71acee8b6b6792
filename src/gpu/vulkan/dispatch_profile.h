// Device time per shader, for SD_VULKAN_PROFILE=1 runs: a timestamp after every recorded step
// (the recorder puts a barrier between steps, so a step's time is the gap to the one before),
// summed by shader name (SD_VULKAN_PROFILE=grid: by shader and workgroup grid, which tells the
// shapes apart) and printed as a table when the recorder goes. Where the device has no
// timestamps, profiling says so once and stays off.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/vulkan/vulkan_device.h"

namespace sd::gpu {

class DispatchProfile {
  public:
    // A profile when SD_VULKAN_PROFILE is set and the device has timestamps, else null.
    static std::unique_ptr<DispatchProfile> from_env(std::shared_ptr<VulkanDevice> device);
    explicit DispatchProfile(std::shared_ptr<VulkanDevice> device);
    ~DispatchProfile();  // logs the table (Info)
    DispatchProfile(const DispatchProfile&) = delete;
    DispatchProfile& operator=(const DispatchProfile&) = delete;

    // At the start of a recording: the query pool reset and the first timestamp.
    void begin(VkCommandBuffer commands);
    // After a step named `name` (a shader's name, "upload", "download"); steps past the pool's
    // capacity in one recording are counted untimed.
    void step(VkCommandBuffer commands, const char* name);
    // A dispatch's step: its shader's name, with the grid where the profile is by grid.
    void dispatch(VkCommandBuffer commands, const char* shader, uint32_t gx, uint32_t gy,
                  uint32_t gz);
    // After the recording's submission completed: its steps' times added to the totals.
    void collect();
    // The table: shader, calls, total ms, share of the device time.
    std::string table() const;

  private:
    static constexpr uint32_t kQueries = 8192;
    std::shared_ptr<VulkanDevice> device_;
    VkQueryPool pool_ = VK_NULL_HANDLE;
    bool by_grid_ = false;
    std::vector<std::string> names_;  // the step after timestamp i is names_[i]
    struct Total {
        int64_t calls = 0;
        double ns = 0;
    };
    std::map<std::string, Total> totals_;
    int64_t untimed_ = 0;
};

}  // namespace sd::gpu
