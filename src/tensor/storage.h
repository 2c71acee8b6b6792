// The memory behind tensors: either a buffer this process owns (from the caching
// allocator) or a read-only range of a mapped file, kept alive by the storage.
#pragma once

#include <cstddef>
#include <memory>

namespace sd {

class MappedFile;

// Where a storage's bytes live. Only host memory exists so far; a device backend adds
// its own kinds, which is why ops ask a storage where it is instead of assuming.
enum class Device { CPU };

class Storage {
  public:
    // Uninitialised memory of `bytes` bytes, 64-byte aligned.
    static std::shared_ptr<Storage> allocate(size_t bytes);
    // A view of `bytes` bytes at `data` inside `file`; read-only.
    static std::shared_ptr<Storage> map(std::shared_ptr<const MappedFile> file, const void* data,
                                        size_t bytes);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    void* data() const { return data_; }
    size_t size() const { return size_; }
    Device device() const { return Device::CPU; }
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
    std::shared_ptr<const MappedFile> file_;  // set for file views
};

}  // namespace sd
