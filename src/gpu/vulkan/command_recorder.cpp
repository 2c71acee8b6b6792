#include "gpu/vulkan/command_recorder.h"

#include <array>
#include <cstring>

#include "base/error.h"
#include "gpu/vulkan/vulkan_fault.h"

namespace sd::gpu {
namespace {

// Descriptor pools are made in blocks of this many sets (four buffers each on average).
constexpr uint32_t kSetsPerPool = 256;
constexpr uint32_t kBuffersPerPool = 4 * kSetsPerPool;

}  // namespace

CommandRecorder::CommandRecorder(std::shared_ptr<VulkanDevice> device)
    : device_(std::move(device)), profile_(DispatchProfile::from_env(device_)) {
    const VulkanDeviceFunctions& vk = device_->vk();
    const VkDevice dev = device_->handle();
    try {
        VkCommandPoolCreateInfo pool{};
        pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        pool.queueFamilyIndex = device_->queue_family();
        vk_check(vk.vkCreateCommandPool(dev, &pool, nullptr, &pool_), "vkCreateCommandPool",
                 device_->label());
        VkCommandBufferAllocateInfo alloc{};
        alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        alloc.commandPool = pool_;
        alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        alloc.commandBufferCount = 1;
        vk_check(vk.vkAllocateCommandBuffers(dev, &alloc, &commands_), "vkAllocateCommandBuffers",
                 device_->label());
        VkFenceCreateInfo fence{};
        fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        vk_check(vk.vkCreateFence(dev, &fence, nullptr, &fence_), "vkCreateFence",
                 device_->label());
    } catch (...) {
        this->reset();
        if (fence_) vk.vkDestroyFence(dev, fence_, nullptr);
        if (pool_) vk.vkDestroyCommandPool(dev, pool_, nullptr);
        throw;
    }
}

CommandRecorder::~CommandRecorder() {
    const VulkanDeviceFunctions& vk = device_->vk();
    const VkDevice dev = device_->handle();
    if (recording_) vk.vkEndCommandBuffer(commands_);
    for (VkDescriptorPool p : descriptor_pools_) vk.vkDestroyDescriptorPool(dev, p, nullptr);
    vk.vkDestroyFence(dev, fence_, nullptr);
    vk.vkDestroyCommandPool(dev, pool_, nullptr);  // frees the command buffer
}

void CommandRecorder::begin_if_needed() {
    if (recording_) return;
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk_check(device_->vk().vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer",
             device_->label());
    recording_ = true;
    if (profile_) profile_->begin(commands_);
}

// Every step reads what the steps before it wrote: one global barrier between steps covers
// compute writes, transfer writes and the reads of either.
void CommandRecorder::barrier() {
    begin_if_needed();
    if (!has_steps_) {
        has_steps_ = true;
        return;
    }
    VkMemoryBarrier b{};
    b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                      VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    device_->vk().vkCmdPipelineBarrier(commands_, stages, stages, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void CommandRecorder::upload(VulkanBuffer& dst, const void* src, size_t bytes, size_t offset) {
    SD_CHECK(offset <= dst.size() && bytes <= dst.size() - offset,
             "%s: upload of %zu bytes at %zu past a buffer of %zu", device_->label().c_str(), bytes,
             offset, dst.size());
    if (bytes == 0) return;
    VulkanBuffer staging(device_, bytes, VulkanBuffer::Memory::Host);
    std::memcpy(staging.mapped(), src, bytes);
    barrier();
    const VkBufferCopy region{0, offset, bytes};
    device_->vk().vkCmdCopyBuffer(commands_, staging.handle(), dst.handle(), 1, &region);
    if (profile_) profile_->step(commands_, "upload");
    uploads_.push_back(std::move(staging));
    staged_bytes_ += bytes;
    stats_.bytes_uploaded += static_cast<int64_t>(bytes);
}

void CommandRecorder::download(const VulkanBuffer& src, void* dst, size_t bytes, size_t offset) {
    SD_CHECK(offset <= src.size() && bytes <= src.size() - offset,
             "%s: download of %zu bytes at %zu past a buffer of %zu", device_->label().c_str(),
             bytes, offset, src.size());
    if (bytes == 0) return;
    VulkanBuffer staging(device_, bytes, VulkanBuffer::Memory::Host);
    barrier();
    const VkBufferCopy region{offset, 0, bytes};
    device_->vk().vkCmdCopyBuffer(commands_, src.handle(), staging.handle(), 1, &region);
    if (profile_) profile_->step(commands_, "download");
    downloads_.push_back({std::move(staging), dst, bytes});
    staged_bytes_ += bytes;
    stats_.bytes_downloaded += static_cast<int64_t>(bytes);
}

VkDescriptorSet CommandRecorder::allocate_set(const VulkanKernel& kernel) {
    const VulkanDeviceFunctions& vk = device_->vk();
    const VkDevice dev = device_->handle();
    for (;;) {
        if (pool_in_use_ == descriptor_pools_.size()) {
            const VkDescriptorPoolSize sizes[] = {
                {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kBuffersPerPool},
                {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, kBuffersPerPool}};
            VkDescriptorPoolCreateInfo info{};
            info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
            info.maxSets = kSetsPerPool;
            info.poolSizeCount = 2;
            info.pPoolSizes = sizes;
            VkDescriptorPool pool = VK_NULL_HANDLE;
            vk_check(vk.vkCreateDescriptorPool(dev, &info, nullptr, &pool),
                     "vkCreateDescriptorPool", device_->label());
            descriptor_pools_.push_back(pool);
        }
        VkDescriptorSetLayout layout = kernel.set_layout();
        VkDescriptorSetAllocateInfo alloc{};
        alloc.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
        alloc.descriptorPool = descriptor_pools_[pool_in_use_];
        alloc.descriptorSetCount = 1;
        alloc.pSetLayouts = &layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        const VkResult r = vk.vkAllocateDescriptorSets(dev, &alloc, &set);
        if (r == VK_SUCCESS) return set;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            vk_check(r, "vkAllocateDescriptorSets", device_->label());
        ++pool_in_use_;  // this pool is full: the next one
    }
}

void CommandRecorder::dispatch(const VulkanKernel& kernel,
                               std::initializer_list<const VulkanBuffer*> buffers, const void* push,
                               size_t push_bytes, uint32_t groups_x, uint32_t groups_y,
                               uint32_t groups_z) {
    const ShaderSpec& spec = kernel.spec();
    SD_CHECK(buffers.size() == spec.buffers && push_bytes == spec.push_bytes,
             "Vulkan shader %s takes %u buffers and %u bytes of push constants, given %zu and %zu",
             spec.name, spec.buffers, spec.push_bytes, buffers.size(), push_bytes);
    const uint32_t max_groups = device_->limits().maxComputeWorkGroupCount[0];
    SD_CHECK(groups_x <= max_groups && groups_y <= device_->limits().maxComputeWorkGroupCount[1] &&
                 groups_z <= device_->limits().maxComputeWorkGroupCount[2],
             "Vulkan shader %s: %u x %u x %u workgroups exceed the device's limits", spec.name,
             groups_x, groups_y, groups_z);
    if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;

    const VkDescriptorSet set = allocate_set(kernel);
    std::array<VkDescriptorBufferInfo, kMaxBindings> infos{};
    std::array<VkBufferView, kMaxBindings> views{};
    std::array<VkWriteDescriptorSet, kMaxBindings> writes{};
    uint32_t i = 0;
    for (const VulkanBuffer* b : buffers) {
        SD_CHECK(b && &b->device() == device_.get(),
                 "Vulkan shader %s: a buffer of another device or none", spec.name);
        VkWriteDescriptorSet& w = writes[i];
        w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        w.dstSet = set;
        w.dstBinding = i;
        w.descriptorCount = 1;
        w.descriptorType = descriptor_type(spec.bindings[i]);
        if (spec.bindings[i] == Binding::Storage) {
            // Buffers are bound whole; larger ones need bound ranges (not built yet).
            SD_CHECK(b->size() <= device_->limits().maxStorageBufferRange,
                     "%s: shader %s: a buffer of %zu bytes is past the device's storage-buffer "
                     "range of %u",
                     device_->label().c_str(), spec.name, b->size(),
                     device_->limits().maxStorageBufferRange);
            infos[i] = {b->handle(), 0, VK_WHOLE_SIZE};
            w.pBufferInfo = &infos[i];
        } else {
            views[i] = b->texel_view(spec.bindings[i]);
            w.pTexelBufferView = &views[i];
        }
        ++i;
    }
    const VulkanDeviceFunctions& vk = device_->vk();
    vk.vkUpdateDescriptorSets(device_->handle(), i, writes.data(), 0, nullptr);
    barrier();
    vk.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline());
    vk.vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.layout(), 0, 1,
                               &set, 0, nullptr);
    if (push_bytes)
        vk.vkCmdPushConstants(commands_, kernel.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                              static_cast<uint32_t>(push_bytes), push);
    vk.vkCmdDispatch(commands_, groups_x, groups_y, groups_z);
    if (profile_) profile_->dispatch(commands_, spec.name, groups_x, groups_y, groups_z);
    ++stats_.dispatches;
}

void CommandRecorder::submit() {
    if (!recording_) return;
    const VulkanDeviceFunctions& vk = device_->vk();
    const VkDevice dev = device_->handle();
    try {
        recording_ = false;
        vk_check(vk.vkEndCommandBuffer(commands_), "vkEndCommandBuffer", device_->label());
        VkSubmitInfo submit{};
        submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        submit.commandBufferCount = 1;
        submit.pCommandBuffers = &commands_;
        VkResult r = injected_submit_fault();
        if (r == VK_SUCCESS) r = vk.vkQueueSubmit(device_->queue(), 1, &submit, fence_);
        if (r == VK_ERROR_DEVICE_LOST) device_->mark_lost();
        vk_check(r, "vkQueueSubmit", device_->label());
        ++stats_.submissions;
        r = vk.vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX);
        if (r == VK_ERROR_DEVICE_LOST) device_->mark_lost();
        vk_check(r, "vkWaitForFences", device_->label());
        vk_check(vk.vkResetFences(dev, 1, &fence_), "vkResetFences", device_->label());
    } catch (...) {
        reset();  // the error names the device and the call
        throw;
    }
    for (Download& d : downloads_) std::memcpy(d.dst, d.staging.mapped(), d.bytes);
    if (profile_) profile_->collect();
    reset();
}

// Back to an empty recording: staging buffers freed, descriptor pools reset for reuse.
void CommandRecorder::reset() noexcept {
    const VulkanDeviceFunctions& vk = device_->vk();
    if (recording_) vk.vkEndCommandBuffer(commands_);
    recording_ = false;
    has_steps_ = false;
    if (commands_) vk.vkResetCommandBuffer(commands_, 0);
    for (VkDescriptorPool p : descriptor_pools_) vk.vkResetDescriptorPool(device_->handle(), p, 0);
    pool_in_use_ = 0;
    uploads_.clear();
    downloads_.clear();
    staged_bytes_ = 0;
}

}  // namespace sd::gpu
