#include "gpu/vulkan/vulkan_device.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <utility>

#include "base/error.h"
#include "base/log.h"
#include "gpu/vulkan/vulkan_kernel.h"

namespace sd::gpu {

// The process's Vulkan instance (one for all devices; made on first use), kept for the life
// of the process like the loader under it: vkDestroyInstance unloads the driver, and Mesa
// 22.3's leaks 128 bytes there (LeakSanitizer sees it in every process that made one).
struct VulkanInstance {
    VkInstance instance = VK_NULL_HANDLE;
    VulkanInstanceFunctions vk;
    std::vector<VkPhysicalDevice> physical;
};

namespace {

struct InstanceOrWhy {
    std::shared_ptr<VulkanInstance> instance;
    std::string why;
};

InstanceOrWhy create_instance() {
    InstanceOrWhy out;
    const VulkanLoader* loader = vulkan_loader();
    if (!loader) {
        out.why = vulkan_api_error();
        return out;
    }
    uint32_t version = VK_API_VERSION_1_0;
    if (loader->enumerate_instance_version) loader->enumerate_instance_version(&version);
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "stable-diffusion";
    app.pEngineName = "stable-diffusion";
    app.apiVersion = version >= VK_API_VERSION_1_1 ? VK_API_VERSION_1_1 : VK_API_VERSION_1_0;
    VkInstanceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    info.pApplicationInfo = &app;
    auto instance = std::make_shared<VulkanInstance>();
    const VkResult r = loader->create_instance(&info, nullptr, &instance->instance);
    if (r != VK_SUCCESS) {
        instance->instance = VK_NULL_HANDLE;
        out.why = strfmt("vkCreateInstance failed: %s", vk_result_name(r));
        return out;
    }
    try {
        load_instance_functions(instance->instance, instance->vk);
        uint32_t n = 0;
        vk_check(instance->vk.vkEnumeratePhysicalDevices(instance->instance, &n, nullptr),
                 "vkEnumeratePhysicalDevices");
        instance->physical.resize(n);
        vk_check(instance->vk.vkEnumeratePhysicalDevices(instance->instance, &n,
                                                         instance->physical.data()),
                 "vkEnumeratePhysicalDevices");
        instance->physical.resize(n);
    } catch (const Error& e) {
        out.why = e.what();
        return out;
    }
    out.instance = std::move(instance);
    return out;
}

const InstanceOrWhy& the_instance() {
    static const InstanceOrWhy* i = new InstanceOrWhy(create_instance());  // never destroyed
    return *i;
}

// The first queue family that computes, or -1.
int compute_queue_family(const VulkanInstance& in, VkPhysicalDevice pd) {
    uint32_t n = 0;
    in.vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    in.vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
    for (uint32_t i = 0; i < n; ++i)
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
    return -1;
}

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return "integrated GPU";
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return "discrete GPU";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return "virtual GPU";
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return "cpu";
        default:
            return "other";
    }
}

uint64_t device_local_bytes(const VkPhysicalDeviceMemoryProperties& m) {
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < m.memoryHeapCount; ++i)
        if (m.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            bytes += m.memoryHeaps[i].size;
    return bytes;
}

bool has_device_extension(const VulkanInstance& in, VkPhysicalDevice pd, const char* name) {
    uint32_t n = 0;
    if (in.vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS)
        return false;
    std::vector<VkExtensionProperties> extensions(n);
    if (in.vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, extensions.data()) !=
        VK_SUCCESS)
        return false;
    for (uint32_t i = 0; i < n; ++i)
        if (std::strcmp(extensions[i].extensionName, name) == 0) return true;
    return false;
}

// Budget less usage over the device-local heaps (VK_EXT_memory_budget), or none where the device
// (or a Vulkan 1.0 instance) cannot say. The budget already leaves out what other processes
// hold; a driver may report a usage above it, which counts as nothing free.
std::optional<uint64_t> free_device_local_bytes(const VulkanInstance& in, VkPhysicalDevice pd) {
    if (!in.vk.vkGetPhysicalDeviceMemoryProperties2) return std::nullopt;
    VkPhysicalDeviceProperties p;
    in.vk.vkGetPhysicalDeviceProperties(pd, &p);
    if (p.apiVersion < VK_API_VERSION_1_1 ||
        !has_device_extension(in, pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME))
        return std::nullopt;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{};
    budget.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
    VkPhysicalDeviceMemoryProperties2 m{};
    m.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
    m.pNext = &budget;
    in.vk.vkGetPhysicalDeviceMemoryProperties2(pd, &m);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < m.memoryProperties.memoryHeapCount; ++i)
        if ((m.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            budget.heapBudget[i] > budget.heapUsage[i])
            bytes += budget.heapBudget[i] - budget.heapUsage[i];
    return bytes;
}

// The physical devices with a compute queue, in the order probe() names them.
std::vector<VkPhysicalDevice> compute_devices(const VulkanInstance& in) {
    std::vector<VkPhysicalDevice> out;
    for (VkPhysicalDevice pd : in.physical)
        if (compute_queue_family(in, pd) >= 0) out.push_back(pd);
    return out;
}

DeviceList probe() {
    DeviceList out;
    const InstanceOrWhy& in = the_instance();
    if (!in.instance) {
        out.unavailable = in.why;
        return out;
    }
    int index = 0;
    for (VkPhysicalDevice pd : compute_devices(*in.instance)) {
        VkPhysicalDeviceProperties p;
        in.instance->vk.vkGetPhysicalDeviceProperties(pd, &p);
        VkPhysicalDeviceMemoryProperties m;
        in.instance->vk.vkGetPhysicalDeviceMemoryProperties(pd, &m);
        DeviceInfo info;
        info.name = strfmt("vulkan%d", index++);
        info.device_local_bytes = device_local_bytes(m);
        info.free_bytes = free_device_local_bytes(*in.instance, pd);
        info.cpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
        info.description =
            strfmt("%s, %s, Vulkan %u.%u.%u, %.1f GiB", p.deviceName, type_name(p.deviceType),
                   VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion),
                   VK_API_VERSION_PATCH(p.apiVersion),
                   static_cast<double>(info.device_local_bytes) / (1024.0 * 1024.0 * 1024.0));
        out.devices.push_back(std::move(info));
    }
    if (out.devices.empty()) out.unavailable = "no Vulkan device with a compute queue";
    return out;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string device_list(const DeviceList& d) {
    if (d.devices.empty()) return d.unavailable;
    std::string out;
    for (const DeviceInfo& i : d.devices) out += (out.empty() ? "" : ", ") + i.name;
    return out;
}

}  // namespace

const DeviceList& vulkan_devices() {
    static const DeviceList d = probe();
    return d;
}

DeviceList vulkan_devices_with_free_memory() {
    DeviceList out = vulkan_devices();
    if (out.devices.empty()) return out;
    const VulkanInstance& in = *the_instance().instance;
    const std::vector<VkPhysicalDevice> physical = compute_devices(in);
    for (size_t i = 0; i < out.devices.size() && i < physical.size(); ++i)
        out.devices[i].free_bytes = free_device_local_bytes(in, physical[i]);
    return out;
}

std::shared_ptr<VulkanDevice> VulkanDevice::open(const std::string& name) {
    const DeviceList& devices = vulkan_devices();
    const std::string wanted = lower(name);
    int index = -1;
    for (size_t i = 0; i < devices.devices.size(); ++i)
        if (devices.devices[i].name == wanted) index = static_cast<int>(i);
    if (index < 0)
        fail("Vulkan device '%s' does not exist (Vulkan devices: %s)", name.c_str(),
             device_list(devices).c_str());

    const std::shared_ptr<VulkanInstance>& in = the_instance().instance;
    // The index counts devices with a compute queue, as probe() named them.
    const VkPhysicalDevice pd = compute_devices(*in)[static_cast<size_t>(index)];
    std::shared_ptr<VulkanDevice> d(new VulkanDevice());
    d->instance_ = in;
    d->name_ = wanted;
    d->label_ = "Vulkan device " + wanted;
    d->physical_ = pd;
    in->vk.vkGetPhysicalDeviceMemoryProperties(pd, &d->memory_);
    VkPhysicalDeviceProperties props;
    in->vk.vkGetPhysicalDeviceProperties(pd, &props);
    d->limits_ = props.limits;
    d->cpu_ = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (in->vk.vkGetPhysicalDeviceProperties2 && props.apiVersion >= VK_API_VERSION_1_1) {
        VkPhysicalDeviceSubgroupProperties subgroup{};
        subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
        VkPhysicalDeviceProperties2 props2{};
        props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        props2.pNext = &subgroup;
        in->vk.vkGetPhysicalDeviceProperties2(pd, &props2);
        const VkSubgroupFeatureFlags needed =
            VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
        if ((subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
            (subgroup.supportedOperations & needed) == needed)
            d->subgroup_size_ = subgroup.subgroupSize;
    }
    d->queue_family_ = static_cast<uint32_t>(compute_queue_family(*in, pd));
    {
        uint32_t n = 0;
        in->vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
        std::vector<VkQueueFamilyProperties> families(n);
        in->vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
        if (families[d->queue_family_].timestampValidBits > 0)
            d->timestamp_ns_ = props.limits.timestampPeriod;
    }

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{};
    queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queue.queueFamilyIndex = d->queue_family_;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    const VkResult r = in->vk.vkCreateDevice(pd, &info, nullptr, &d->device_);
    if (r != VK_SUCCESS) {
        d->device_ = VK_NULL_HANDLE;
        vk_check(r, "vkCreateDevice", d->label_);
    }
    load_device_functions(in->vk, d->device_, d->vk_);
    d->vk_.vkGetDeviceQueue(d->device_, d->queue_family_, 0, &d->queue_);
    SD_LOG_DEBUG("Vulkan: opened %s (%s)", d->name_.c_str(),
                 devices.devices[static_cast<size_t>(index)].description.c_str());
    return d;
}

VulkanDevice::~VulkanDevice() {
    kernels_.clear();  // pipelines before the device that made them
    if (device_ && vk_.vkDestroyDevice) vk_.vkDestroyDevice(device_, nullptr);
}

uint32_t VulkanDevice::memory_type(uint32_t type_bits, bool host) const {
    const VkMemoryPropertyFlags want =
        host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
             : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
        if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want)
            return i;
    // Device memory falls back to any type the buffer allows (a device without local heaps).
    if (!host)
        for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
            if (type_bits & (1u << i)) return i;
    fail("%s has no %s memory for a buffer", label_.c_str(),
         host ? "host-visible coherent" : "usable");
}

const VulkanKernel& VulkanDevice::kernel(const ShaderSpec& spec) {
    std::lock_guard<std::mutex> lock(kernels_mutex_);
    auto it = kernels_.find(spec.name);
    if (it == kernels_.end())
        it = kernels_.emplace(spec.name, std::make_unique<VulkanKernel>(*this, spec)).first;
    return *it->second;
}

VulkanBuffer::VulkanBuffer(std::shared_ptr<VulkanDevice> device, size_t bytes, Memory memory)
    : device_(std::move(device)), size_(bytes) {
    SD_CHECK(bytes > 0, "Vulkan device %s: a buffer of 0 bytes", device_->name().c_str());
    const VulkanDeviceFunctions& vk = device_->vk();
    VkBufferCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    // Whole 32-bit words: shaders read a weight's bytes as words, and a block-quant tensor's
    // last bytes (q6_K's d at 208 of 210) would share a word past the end.
    info.size = (bytes + 3) & ~size_t(3);
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    try {
        vk_check(vk.vkCreateBuffer(device_->handle(), &info, nullptr, &buffer_), "vkCreateBuffer",
                 device_->label());
        VkMemoryRequirements req;
        vk.vkGetBufferMemoryRequirements(device_->handle(), buffer_, &req);
        VkMemoryAllocateInfo alloc{};
        alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
        alloc.allocationSize = req.size;
        alloc.memoryTypeIndex = device_->memory_type(req.memoryTypeBits, memory == Memory::Host);
        const VkResult r = vk.vkAllocateMemory(device_->handle(), &alloc, nullptr, &memory_);
        if (r != VK_SUCCESS) {
            memory_ = VK_NULL_HANDLE;
            fail("Vulkan device %s: cannot allocate %zu bytes of %s memory: %s",
                 device_->name().c_str(), bytes, memory == Memory::Host ? "host" : "device",
                 vk_result_name(r));
        }
        vk_check(vk.vkBindBufferMemory(device_->handle(), buffer_, memory_, 0),
                 "vkBindBufferMemory", device_->label());
        if (memory == Memory::Host) {
            void* p = nullptr;
            vk_check(vk.vkMapMemory(device_->handle(), memory_, 0, VK_WHOLE_SIZE, 0, &p),
                     "vkMapMemory", device_->label());
            mapped_ = static_cast<std::byte*>(p);
        }
    } catch (...) {
        release();
        throw;
    }
}

VkBufferView VulkanBuffer::texel_view(Binding binding) const {
    SD_CHECK(binding != Binding::Storage, "Vulkan: a storage binding has no texel view");
    const size_t index = static_cast<size_t>(binding) - 1;
    if (views_[index]) return views_[index];
    static constexpr VkFormat kFormats[] = {VK_FORMAT_R32_SFLOAT, VK_FORMAT_R32_UINT,
                                            VK_FORMAT_R32G32B32A32_UINT};
    static constexpr size_t kTexelBytes[] = {4, 4, 16};
    const uint64_t texels = size_ / kTexelBytes[index];
    SD_CHECK(texels <= device_->limits().maxTexelBufferElements,
             "%s: a buffer of %zu bytes is %llu texels, past the device's texel-buffer limit of "
             "%u",
             device_->label().c_str(), size_, static_cast<unsigned long long>(texels),
             device_->limits().maxTexelBufferElements);
    VkBufferViewCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO;
    info.buffer = buffer_;
    info.format = kFormats[index];
    info.range = VK_WHOLE_SIZE;
    vk_check(device_->vk().vkCreateBufferView(device_->handle(), &info, nullptr, &views_[index]),
             "vkCreateBufferView", device_->label());
    return views_[index];
}

void VulkanBuffer::release() noexcept {
    if (!device_) return;
    const VulkanDeviceFunctions& vk = device_->vk();
    for (VkBufferView& v : views_) {
        if (v) vk.vkDestroyBufferView(device_->handle(), v, nullptr);
        v = VK_NULL_HANDLE;
    }
    if (mapped_) vk.vkUnmapMemory(device_->handle(), memory_);
    if (buffer_) vk.vkDestroyBuffer(device_->handle(), buffer_, nullptr);
    if (memory_) vk.vkFreeMemory(device_->handle(), memory_, nullptr);
    mapped_ = nullptr;
    buffer_ = VK_NULL_HANDLE;
    memory_ = VK_NULL_HANDLE;
}

VulkanBuffer::~VulkanBuffer() {
    release();
}

VulkanBuffer::VulkanBuffer(VulkanBuffer&& o) noexcept
    : device_(std::move(o.device_)),
      size_(o.size_),
      buffer_(o.buffer_),
      memory_(o.memory_),
      mapped_(o.mapped_),
      views_(std::exchange(o.views_, {})) {
    o.buffer_ = VK_NULL_HANDLE;
    o.memory_ = VK_NULL_HANDLE;
    o.mapped_ = nullptr;
}

VulkanBuffer& VulkanBuffer::operator=(VulkanBuffer&& o) noexcept {
    if (this != &o) {
        release();
        device_ = std::move(o.device_);
        size_ = o.size_;
        buffer_ = std::exchange(o.buffer_, VK_NULL_HANDLE);
        memory_ = std::exchange(o.memory_, VK_NULL_HANDLE);
        mapped_ = std::exchange(o.mapped_, nullptr);
        views_ = std::exchange(o.views_, {});
    }
    return *this;
}

}  // namespace sd::gpu
