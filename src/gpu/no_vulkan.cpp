// vulkan_devices() of a build without Vulkan (-DSD_VULKAN=OFF or no Vulkan headers / glslc);
// a build with it compiles vulkan/vulkan_device.cpp in place of this file.
#include "gpu/devices.h"

namespace sd::gpu {

const DeviceList& vulkan_devices() {
    static const DeviceList none{{}, "this build has no Vulkan (built without SD_VULKAN)"};
    return none;
}

}  // namespace sd::gpu
