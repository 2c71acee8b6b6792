// The GPU devices of this machine as the placement code lists them, in a header free of any
// GPU API (a build without Vulkan has the same functions: no devices, and why).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sd::gpu {

struct DeviceInfo {
    std::string name;         // "vulkan0"
    std::string description;  // "llvmpipe (LLVM 15.0.6, 256 bits), cpu, Vulkan 1.3.230, 23.4 GiB"
    uint64_t device_local_bytes = 0;
    // Device-local memory this process may still allocate (VK_EXT_memory_budget: each
    // device-local heap's budget less what this process uses of it), read when the list was
    // made; none where the device does not report it.
    std::optional<uint64_t> free_bytes;
    bool cpu = false;  // a CPU-class device (lavapipe): slower than the engine's own CPU kernels
};

// The Vulkan devices, probed once per process and named vulkan0, vulkan1, ... in the loader's
// order (those with a compute queue); none, with `unavailable` saying why in one line, where
// the build has no Vulkan, or the machine no loader, no instance or no such device.
struct DeviceList {
    std::vector<DeviceInfo> devices;
    std::string unavailable;
};
const DeviceList& vulkan_devices();

// vulkan_devices() with each device's free_bytes read now (what other processes and this one
// have allocated since the first probe changes it), for placing models by size.
DeviceList vulkan_devices_with_free_memory();

}  // namespace sd::gpu
