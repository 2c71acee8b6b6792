#include "gpu/vulkan/vulkan_api.h"

#include <dlfcn.h>

#include "base/error.h"

namespace sd::gpu {
namespace {

struct LoadedLoader {
    VulkanLoader loader;
    std::string error;
    bool ok = false;
};

LoadedLoader open_loader() {
    LoadedLoader out;
    // Opened for the life of the process: instances may outlive any one caller.
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = dlerror();
        out.error = strfmt("no Vulkan loader (libvulkan.so.1: %s)", why ? why : "not found");
        return out;
    }
    auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!get) {
        out.error = "the Vulkan loader libvulkan.so.1 has no vkGetInstanceProcAddr";
        return out;
    }
    out.loader.get_instance_proc_addr = get;
    out.loader.create_instance =
        reinterpret_cast<PFN_vkCreateInstance>(get(VK_NULL_HANDLE, "vkCreateInstance"));
    out.loader.enumerate_instance_version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
        get(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"));
    if (!out.loader.create_instance) {
        out.error = "the Vulkan loader libvulkan.so.1 has no vkCreateInstance";
        return out;
    }
    out.ok = true;
    return out;
}

const LoadedLoader& loaded() {
    static const LoadedLoader l = open_loader();
    return l;
}

}  // namespace

const VulkanLoader* vulkan_loader() {
    return loaded().ok ? &loaded().loader : nullptr;
}

const std::string& vulkan_api_error() {
    return loaded().error;
}

void load_instance_functions(VkInstance instance, VulkanInstanceFunctions& out) {
    const VulkanLoader* loader = vulkan_loader();
    SD_CHECK(loader, "Vulkan: %s", vulkan_api_error().c_str());
#define SD_VULKAN_LOAD(name)                                                                  \
    out.name = reinterpret_cast<PFN_##name>(loader->get_instance_proc_addr(instance, #name)); \
    SD_CHECK(out.name, "Vulkan: the loader has no %s", #name);
    SD_VULKAN_INSTANCE_FUNCTIONS(SD_VULKAN_LOAD)
#undef SD_VULKAN_LOAD
    out.vkGetPhysicalDeviceProperties2 = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(
        loader->get_instance_proc_addr(instance, "vkGetPhysicalDeviceProperties2"));
    out.vkGetPhysicalDeviceMemoryProperties2 =
        reinterpret_cast<PFN_vkGetPhysicalDeviceMemoryProperties2>(
            loader->get_instance_proc_addr(instance, "vkGetPhysicalDeviceMemoryProperties2"));
}

void load_device_functions(const VulkanInstanceFunctions& vk, VkDevice device,
                           VulkanDeviceFunctions& out) {
#define SD_VULKAN_LOAD(name)                                                        \
    out.name = reinterpret_cast<PFN_##name>(vk.vkGetDeviceProcAddr(device, #name)); \
    SD_CHECK(out.name, "Vulkan: the device has no %s", #name);
    SD_VULKAN_DEVICE_FUNCTIONS(SD_VULKAN_LOAD)
#undef SD_VULKAN_LOAD
}

const char* vk_result_name(VkResult result) {
    switch (result) {
#define SD_VK_RESULT(r) \
    case r:             \
        return #r;
        SD_VK_RESULT(VK_SUCCESS)
        SD_VK_RESULT(VK_NOT_READY)
        SD_VK_RESULT(VK_TIMEOUT)
        SD_VK_RESULT(VK_INCOMPLETE)
        SD_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
        SD_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        SD_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
        SD_VK_RESULT(VK_ERROR_DEVICE_LOST)
        SD_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
        SD_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
        SD_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
        SD_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
        SD_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
        SD_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
        SD_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
        SD_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
        SD_VK_RESULT(VK_ERROR_UNKNOWN)
        SD_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
        SD_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        SD_VK_RESULT(VK_ERROR_FRAGMENTATION)
#undef SD_VK_RESULT
        default:
            return "an unknown VkResult";
    }
}

void vk_check(VkResult result, const char* call, const std::string& where) {
    if (result != VK_SUCCESS) [[unlikely]]
        fail("%s: %s failed: %s (%d)", where.c_str(), call, vk_result_name(result),
             static_cast<int>(result));
}

}  // namespace sd::gpu
