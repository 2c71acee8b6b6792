// The memory behind tensors: either a buffer this process owns (from the caching
// allocator) or a read-only range of a mapped file, kept alive by the storage.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace sd {

class MappedFile;
namespace gpu {
class DeviceAllocation;  // gpu/device_tensor.h: a buffer in a device's memory
}

// Where a storage's bytes live: host memory, or a Vulkan device's memory (ops on such
// tensors run on that device; gpu/device_tensor.h moves tensors between the two).
enum class Device { CPU, Vulkan };

class Storage {
  public:
    // Uninitialised memory of `bytes` bytes, 64-byte aligned.
    static std::shared_ptr<Storage> allocate(size_t bytes);
    // A view of `bytes` bytes at `data` inside `file`; read-only.
    static std::shared_ptr<Storage> map(std::shared_ptr<const MappedFile> file, const void* data,
                                        size_t bytes);
    // Device memory of `bytes` bytes (gpu/device_tensor.h makes these); `device_name` is the
    // device's name ("vulkan0") for messages. data() is null: the host cannot read it.
    static std::shared_ptr<Storage> on_device(std::shared_ptr<gpu::DeviceAllocation> allocation,
                                              size_t bytes, std::string device_name);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    void* data() const { return data_; }
    size_t size() const { return size_; }
    Device device() const { return allocation_ ? Device::Vulkan : Device::CPU; }
    // "cpu", or the device's name ("vulkan0").
    const std::string& device_name() const;
    const std::shared_ptr<gpu::DeviceAllocation>& allocation() const { return allocation_; }
    bool writable() const { return !file_; }
    const std::shared_ptr<const MappedFile>& file() const { return file_; }
    // A file view drops its pages from this process's RSS; they stay in the page cache and
    // come back on the next touch. Owned memory is unaffected.
    void release_pages() const;
    // A file view maps its pages in with one call, ahead of a full read (see MappedFile).
    void populate_pages() const;

  private:
    Storage() = default;
    void* data_ = nullptr;
    size_t size_ = 0;
    std::shared_ptr<const MappedFile> file_;             // set for file views
    std::shared_ptr<gpu::DeviceAllocation> allocation_;  // set for device memory
    std::string device_name_;
};

}  // namespace sd
