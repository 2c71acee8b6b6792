#include "gpu/vulkan/vulkan_fault.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/log.h"

namespace sd::gpu {
namespace {

struct Fault {
    std::mutex mutex;
    VkResult result = VK_SUCCESS;
    int64_t left = 0;  // submissions until it fires
};

Fault& fault() {
    static Fault f;
    static std::once_flag from_env;
    std::call_once(from_env, [] {
        const char* env = std::getenv("SD_VULKAN_FAULT");
        if (!env || !*env) return;
        const std::string spec = env;
        const size_t at = spec.find('@');
        const std::string kind = spec.substr(0, at);
        const long long n = at == std::string::npos ? 0 : std::atoll(spec.c_str() + at + 1);
        VkResult r = VK_SUCCESS;
        if (kind == "device_lost") r = VK_ERROR_DEVICE_LOST;
        if (kind == "out_of_memory") r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
        if (r == VK_SUCCESS || n < 1) {
            SD_LOG_WARN("SD_VULKAN_FAULT='%s' is not device_lost@N or out_of_memory@N; ignored",
                        env);
            return;
        }
        f.result = r;
        f.left = n;
    });
    return f;
}

}  // namespace

void set_submit_fault(VkResult result, int64_t after) {
    Fault& f = fault();
    std::lock_guard<std::mutex> lock(f.mutex);
    f.result = result;
    f.left = after;
}

VkResult injected_submit_fault() {
    Fault& f = fault();
    std::lock_guard<std::mutex> lock(f.mutex);
    if (f.result == VK_SUCCESS || f.left <= 0 || --f.left > 0) return VK_SUCCESS;
    const VkResult r = f.result;
    f.result = VK_SUCCESS;
    SD_LOG_WARN("SD_VULKAN_FAULT: a queue submission fails as %s", vk_result_name(r));
    return r;
}

}  // namespace sd::gpu
