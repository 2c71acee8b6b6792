#include "tensor/storage.h"

#include <cstdint>

#include "base/mapped_file.h"
#include "tensor/caching_allocator.h"

namespace sd {

std::shared_ptr<Storage> Storage::allocate(size_t bytes) {
    std::shared_ptr<Storage> s(new Storage());
    s->data_ = CachingAllocator::instance().allocate(bytes);
    s->size_ = bytes;
    return s;
}

std::shared_ptr<Storage> Storage::map(std::shared_ptr<const MappedFile> file, const void* data,
                                      size_t bytes) {
    std::shared_ptr<Storage> s(new Storage());
    s->data_ = const_cast<void*>(data);
    s->size_ = bytes;
    s->file_ = std::move(file);
    return s;
}

std::shared_ptr<Storage> Storage::on_device(std::shared_ptr<gpu::DeviceAllocation> allocation,
                                            size_t bytes, std::string device_name) {
    std::shared_ptr<Storage> s(new Storage());
    s->size_ = bytes;
    s->allocation_ = std::move(allocation);
    s->device_name_ = std::move(device_name);
    return s;
}

const std::string& Storage::device_name() const {
    static const std::string cpu = "cpu";
    return allocation_ ? device_name_ : cpu;
}

void Storage::release_pages() const {
    if (!file_) return;
    const auto offset = static_cast<size_t>(static_cast<const uint8_t*>(data_) - file_->data());
    file_->release_pages(offset, size_);
}

void Storage::populate_pages() const {
    if (!file_) return;
    const auto offset = static_cast<size_t>(static_cast<const uint8_t*>(data_) - file_->data());
    file_->populate_pages(offset, size_);
}

Storage::~Storage() {
    if (!file_ && !allocation_) CachingAllocator::instance().deallocate(data_, size_);
}

}  // namespace sd
