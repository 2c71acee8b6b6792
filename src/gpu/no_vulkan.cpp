// gpu/devices.h, gpu/device_tensor.h and gpu/device_ops.h in a build without Vulkan
// (-DSD_VULKAN=OFF or no Vulkan headers / glslc): no devices, and why. No device tensor can
// exist in such a build, so the device ops are never reached; they throw if they are.
#include "base/error.h"
#include "gpu/device_ops.h"
#include "gpu/device_tensor.h"
#include "gpu/devices.h"

namespace sd::gpu {

const DeviceList& vulkan_devices() {
    static const DeviceList none{{}, "this build has no Vulkan (built without SD_VULKAN)"};
    return none;
}

DeviceList vulkan_devices_with_free_memory() {
    return vulkan_devices();
}

[[noreturn]] static void no_device() {
    fail("this build has no GPU backend (built without SD_VULKAN): models run on the CPU");
}

std::shared_ptr<Stream> open_stream(const std::string& name, const StreamOptions&) {
    fail("device '%s': this build has no Vulkan (built without SD_VULKAN)", name.c_str());
}
const std::string& stream_device_name(const Stream&) {
    no_device();
}
StreamStats stream_stats(const Stream&) {
    no_device();
}
void synchronize(Stream&) {
    no_device();
}
void settle(Stream&) noexcept {}
Tensor to_device(const Tensor&, Stream&) {
    no_device();
}
Tensor to_host(const Tensor& t) {
    return t;
}
std::vector<Tensor> to_host(const std::vector<Tensor>& tensors) {
    return tensors;
}
Tensor empty_like_place(const Tensor&, const Shape& shape, DType dtype) {
    return Tensor::empty(shape, dtype);
}
Tensor placed_like(const Tensor& host, const Tensor&) {
    return host;
}
std::shared_ptr<Stream> stream_of(const Tensor&) {
    return nullptr;
}

}  // namespace sd::gpu

namespace sd::on_device {

[[noreturn]] static void no_device() {
    fail("this build has no GPU backend (built without SD_VULKAN)");
}
Tensor linear(const Tensor&, const Tensor&, const Tensor&) {
    no_device();
}
Tensor conv2d(const Tensor&, const Tensor&, const Tensor&, const Conv2dOptions&) {
    no_device();
}
void conv2d_into(const Tensor&, const Tensor&, const Tensor&, const Conv2dOptions&, const Tensor&) {
    no_device();
}
Tensor conv2d_add(const Tensor&, const Tensor&, const Tensor&, const Conv2dOptions&,
                  const Tensor&) {
    no_device();
}
Tensor group_norm(const Tensor&, int64_t, const Tensor&, const Tensor&, float, bool) {
    no_device();
}
Tensor layer_norm(const Tensor&, const Tensor&, const Tensor&, float) {
    no_device();
}
Tensor rms_norm(const Tensor&, const Tensor&, float) {
    no_device();
}
Tensor softmax(const Tensor&, int) {
    no_device();
}
Tensor attention(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                 const AttentionOptions&) {
    no_device();
}
Tensor arith(Arith, const Tensor&, const Tensor&) {
    no_device();
}
Tensor pointwise(Pointwise, const Tensor&, float, float) {
    no_device();
}
Tensor geglu(const Tensor&) {
    no_device();
}
void add_scaled_into(const Tensor&, const Tensor&, float, const Tensor&) {
    no_device();
}
Tensor concat(const std::vector<Tensor>&, int) {
    no_device();
}
Tensor permute_copy(const Tensor&, const std::vector<int>&) {
    no_device();
}
void copy_into(const Tensor&, const Tensor&) {
    no_device();
}
Tensor contiguous(const Tensor&) {
    no_device();
}
Tensor clone(const Tensor&) {
    no_device();
}
Tensor pad2d(const Tensor&, int64_t, int64_t, int64_t, int64_t, float) {
    no_device();
}
Tensor upsample_nearest2x(const Tensor&) {
    no_device();
}
Tensor run_on_host(const char*, const std::vector<Tensor>&,
                   const std::function<Tensor(const std::vector<Tensor>&)>&) {
    no_device();
}
bool any(std::initializer_list<const Tensor*>) {
    return false;
}

}  // namespace sd::on_device
