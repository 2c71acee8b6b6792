// Helpers of the Vulkan kernel tests: the device they run on and buffers made from host data.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "fixture_files.h"
#include "gpu/device_tensor.h"
#include "gpu/vulkan/command_recorder.h"
#include "gpu/vulkan/vulkan_shaders.h"
#include "tensor/tensor.h"

namespace sd::test {

using gpu::CommandRecorder;
using gpu::VulkanBuffer;
using gpu::VulkanDevice;

// This machine's first Vulkan device (lavapipe in CI). A build with Vulkan kernels on a
// machine with no device is a setup error, named, not a skip.
inline std::shared_ptr<VulkanDevice> first_vulkan_device() {
    const gpu::DeviceList& d = gpu::vulkan_devices();
    if (d.devices.empty())
        throw Error("this build has Vulkan kernels but the machine no device: " + d.unavailable +
                    " (install mesa-vulkan-drivers)");
    return VulkanDevice::open(d.devices[0].name);
}

// The blockings of the GEMM and attention shaders this device runs: the tiled ones always, the
// lanes ones where it has subgroups of 8 lanes or more (lavapipe on AVX2: 8).
inline std::vector<gpu::shaders::Blocking> device_blockings() {
    std::vector<gpu::shaders::Blocking> out = {gpu::shaders::Blocking::Tiled};
    if (first_vulkan_device()->subgroup_size() >= 8) out.push_back(gpu::shaders::Blocking::Lanes);
    return out;
}

// A stream (gpu/device_tensor.h) on this machine's first Vulkan device.
inline std::shared_ptr<gpu::Stream> first_vulkan_stream(const gpu::StreamOptions& options = {}) {
    return gpu::open_stream(first_vulkan_device()->name(), options);
}

// A device buffer holding `values`, uploaded by `rec` (before its next steps).
inline VulkanBuffer device_buffer_of(CommandRecorder& rec, const std::vector<float>& values) {
    VulkanBuffer b(rec.shared_device(), std::max<size_t>(values.size(), 1) * sizeof(float),
                   VulkanBuffer::Memory::Device);
    if (!values.empty()) rec.upload(b, values.data(), values.size() * sizeof(float));
    return b;
}

// A device buffer for `count` floats (contents undefined until written).
inline VulkanBuffer device_floats(CommandRecorder& rec, int64_t count) {
    return VulkanBuffer(rec.shared_device(), std::max<size_t>(size_t(count), 1) * sizeof(float),
                        VulkanBuffer::Memory::Device);
}

// The first `shape.numel()` floats of a buffer as a tensor, after submitting what `rec` holds.
inline Tensor read_back(CommandRecorder& rec, const VulkanBuffer& b, const Shape& shape) {
    Tensor t = Tensor::empty(shape);
    rec.download(b, t.data<float>(), size_t(shape.numel()) * sizeof(float));
    rec.submit();
    return t;
}

}  // namespace sd::test
