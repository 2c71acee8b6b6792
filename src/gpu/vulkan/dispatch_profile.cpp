#include "gpu/vulkan/dispatch_profile.h"

#include <algorithm>
#include <cstdlib>

#include "base/log.h"
#include "base/strfmt.h"

namespace sd::gpu {

std::unique_ptr<DispatchProfile> DispatchProfile::from_env(std::shared_ptr<VulkanDevice> device) {
    const char* env = std::getenv("SD_VULKAN_PROFILE");
    if (!env || !*env || std::string(env) == "0") return nullptr;
    if (device->timestamp_ns() <= 0) {
        SD_LOG_WARN("SD_VULKAN_PROFILE: %s has no timestamps on its compute queue; not profiled",
                    device->label().c_str());
        return nullptr;
    }
    auto profile = std::make_unique<DispatchProfile>(std::move(device));
    profile->by_grid_ = std::string(env) == "grid";
    return profile;
}

DispatchProfile::DispatchProfile(std::shared_ptr<VulkanDevice> device)
    : device_(std::move(device)) {
    VkQueryPoolCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = kQueries;
    vk_check(device_->vk().vkCreateQueryPool(device_->handle(), &info, nullptr, &pool_),
             "vkCreateQueryPool", device_->label());
}

DispatchProfile::~DispatchProfile() {
    if (!totals_.empty()) SD_LOG_INFO("%s", table().c_str());
    device_->vk().vkDestroyQueryPool(device_->handle(), pool_, nullptr);
}

void DispatchProfile::begin(VkCommandBuffer commands) {
    names_.clear();
    device_->vk().vkCmdResetQueryPool(commands, pool_, 0, kQueries);
    device_->vk().vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
}

void DispatchProfile::step(VkCommandBuffer commands, const char* name) {
    if (names_.size() + 1 >= kQueries) {
        ++untimed_;
        return;
    }
    names_.push_back(name);
    device_->vk().vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_,
                                      static_cast<uint32_t>(names_.size()));
}

void DispatchProfile::dispatch(VkCommandBuffer commands, const char* shader, uint32_t gx,
                               uint32_t gy, uint32_t gz) {
    if (!by_grid_) return step(commands, shader);
    step(commands, strfmt("%s [%u x %u x %u]", shader, gx, gy, gz).c_str());
}

void DispatchProfile::collect() {
    if (names_.empty()) return;
    std::vector<uint64_t> ticks(names_.size() + 1);
    const VkResult r = device_->vk().vkGetQueryPoolResults(
        device_->handle(), pool_, 0, static_cast<uint32_t>(ticks.size()),
        ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r == VK_SUCCESS) {
        for (size_t i = 0; i < names_.size(); ++i) {
            Total& t = totals_[names_[i]];
            ++t.calls;
            t.ns += double(ticks[i + 1] - ticks[i]) * device_->timestamp_ns();
        }
    }
    names_.clear();
}

std::string DispatchProfile::table() const {
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    double all = 0;
    for (const auto& [name, t] : rows) all += t.ns;
    std::string out = strfmt("device time on %s by shader (SD_VULKAN_PROFILE): %.1f ms in all\n",
                             device_->label().c_str(), all * 1e-6);
    for (const auto& [name, t] : rows)
        out += strfmt("  %-40s %8lld calls %11.1f ms %5.1f%%\n", name.c_str(),
                      static_cast<long long>(t.calls), t.ns * 1e-6,
                      all > 0 ? 100.0 * t.ns / all : 0.0);
    if (untimed_ > 0)
        out += strfmt("  (%lld steps untimed: past %u a recording)\n",
                      static_cast<long long>(untimed_), kQueries - 1);
    return out;
}

}  // namespace sd::gpu
