// A failpoint for the tests of device failures: the Nth queue submission of the process fails
// as if the device had been lost (or had run out of memory), without running. Set by the
// environment (SD_VULKAN_FAULT=device_lost@N or out_of_memory@N, read once) or by a test.
#pragma once

#include <cstdint>

#include "gpu/vulkan/vulkan_api.h"

namespace sd::gpu {

// From now on, the `after`th submission (1: the next) fails with `result` (VK_SUCCESS: none).
void set_submit_fault(VkResult result, int64_t after);
// Called at each submission: VK_SUCCESS, or the injected failure when its turn has come.
VkResult injected_submit_fault();

}  // namespace sd::gpu
