#include "gpu/vulkan/vulkan_stream.h"

#include <cstring>
#include <functional>
#include <vector>

#include "base/error.h"
#include "base/log.h"

namespace sd::gpu {
namespace {

// A recording holding more staging memory than this is submitted before the next op, so
// that streamed weights (--max-vram) do not pile up in host memory for a whole pass.
constexpr size_t kStagingLimit = size_t{256} << 20;

// Buffer sizes are rounded to classes (2^k and 1.5 * 2^k from 64 KiB, 256-byte steps below)
// so that a freed buffer fits the next tensor of about its size.
size_t size_class(size_t bytes) {
    if (bytes <= (size_t{64} << 10)) return (bytes + 255) / 256 * 256;
    size_t p = size_t{64} << 10;
    while (p < bytes) {
        if (p + p / 2 >= bytes) return p + p / 2;
        p *= 2;
    }
    return p;
}

}  // namespace

// Hands a released buffer back to its stream's pool, or frees it when the stream is gone.
struct BufferRecycler {
    Stream* stream;
    std::weak_ptr<bool> alive;
    void operator()(VulkanBuffer* buffer) const noexcept {
        if (alive.lock())
            stream->recycle(buffer);
        else
            delete buffer;
    }
};

size_t Stream::ConstantHash::operator()(const ConstantKey& k) const {
    size_t h = std::hash<const void*>()(k.storage);
    h ^= std::hash<size_t>()(k.offset) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= std::hash<size_t>()(k.bytes * 2 + (k.f32 ? 1 : 0)) + (h << 6) + (h >> 2);
    return h;
}

Stream::Stream(std::shared_ptr<VulkanDevice> device, const StreamOptions& options)
    : device_(std::move(device)),
      options_(options),
      recorder_(std::make_unique<CommandRecorder>(device_)) {}

Stream::~Stream() {
    alive_.reset();  // buffers released from here on are freed, not pooled
    op_buffers_.clear();
    constants_.clear();
    release_pool();
}

std::shared_ptr<VulkanBuffer> Stream::allocate(size_t bytes) {
    const size_t size = size_class(bytes < 4 ? 4 : bytes);
    if (auto it = pool_.find(size); it != pool_.end()) {
        VulkanBuffer* b = it->second.release();
        pool_.erase(it);
        return std::shared_ptr<VulkanBuffer>(b, BufferRecycler{this, alive_});
    }
    std::unique_ptr<VulkanBuffer> made;
    try {
        made = std::make_unique<VulkanBuffer>(device_, size, VulkanBuffer::Memory::Device);
    } catch (const Error&) {
        if (pool_.empty()) throw;  // out of device memory with nothing to give back
        // The pool's buffers may still be named by the recording: submit it first.
        recorder_->submit();
        release_pool();
        made = std::make_unique<VulkanBuffer>(device_, size, VulkanBuffer::Memory::Device);
    }
    device_bytes_ += static_cast<int64_t>(size);
    if (device_bytes_ > device_bytes_peak_) device_bytes_peak_ = device_bytes_;
    return std::shared_ptr<VulkanBuffer>(made.release(), BufferRecycler{this, alive_});
}

void Stream::recycle(VulkanBuffer* buffer) noexcept {
    if (&buffer->device() != device_.get()) {  // a buffer of the device before a reopen
        device_bytes_ -= static_cast<int64_t>(buffer->size());
        delete buffer;
        return;
    }
    try {
        pool_.emplace(buffer->size(), std::unique_ptr<VulkanBuffer>(buffer));
    } catch (...) {
        device_bytes_ -= static_cast<int64_t>(buffer->size());
        delete buffer;
    }
}

void Stream::release_pool() noexcept {
    for (auto& [size, buffer] : pool_) device_bytes_ -= static_cast<int64_t>(size);
    pool_.clear();
}

Tensor Stream::empty(const Shape& shape, DType dtype) {
    const size_t bytes = row_bytes(dtype, shape.numel());
    auto allocation = std::make_shared<DeviceAllocation>(shared_from_this(), allocate(bytes));
    return Tensor::from_storage(Storage::on_device(std::move(allocation), bytes, name()), 0, shape,
                                dtype);
}

VulkanBuffer& Stream::buffer(const Tensor& t, const char* op) const {
    SD_CHECK(t.defined() && t.device() == Device::Vulkan,
             "%s on %s: %s is in host memory (move it with to_device)", op, name().c_str(),
             t.describe().c_str());
    const auto& allocation = t.storage()->allocation();
    SD_CHECK(&allocation->stream() == this, "%s: %s belongs to another run's stream on %s", op,
             t.describe().c_str(), t.storage()->device_name().c_str());
    return allocation->buffer();
}

void Stream::begin_op() {
    ++op_;
    op_buffers_.clear();
    if (recorder_->staged_bytes() > kStagingLimit) recorder_->submit();
}

void Stream::keep_for_op(const Tensor& t) {
    op_buffers_.push_back(t.storage()->allocation()->shared_buffer());
}

void Stream::evict_for(uint64_t bytes) {
    // Drop the constants whose host tensor is gone, then the least recently used ones until
    // `bytes` more fit the budget; those the current op uses stay.
    for (auto it = constants_.begin(); it != constants_.end();) {
        if (it->second.storage.expired() && it->second.last_use != op_) {
            constant_bytes_ -= static_cast<int64_t>(it->first.bytes);
            it = constants_.erase(it);
        } else {
            ++it;
        }
    }
    if (options_.weight_budget == 0) return;
    while (static_cast<uint64_t>(constant_bytes_) + bytes > options_.weight_budget) {
        auto oldest = constants_.end();
        for (auto it = constants_.begin(); it != constants_.end(); ++it)
            if (it->second.last_use != op_ &&
                (oldest == constants_.end() || it->second.last_use < oldest->second.last_use))
                oldest = it;
        if (oldest == constants_.end()) return;  // the op's own weights exceed the budget
        constant_bytes_ -= static_cast<int64_t>(oldest->first.bytes);
        constants_.erase(oldest);
    }
}

const VulkanBuffer& Stream::constant(const Tensor& host, bool as_f32) {
    SD_CHECK(host.defined() && host.device() == Device::CPU,
             "%s: a weight or constant must be a host tensor, not %s", name().c_str(),
             host.describe().c_str());
    SD_CHECK(host.is_contiguous(), "%s: weight %s is not contiguous", name().c_str(),
             host.describe().c_str());
    const bool convert = as_f32 && host.dtype() != DType::F32;
    const size_t bytes =
        convert ? static_cast<size_t>(host.numel()) * sizeof(float) : host.nbytes();
    const ConstantKey key{host.storage().get(), row_bytes(host.dtype(), host.offset()), bytes,
                          convert};
    if (auto it = constants_.find(key); it != constants_.end()) {
        if (!it->second.storage.expired()) {
            it->second.last_use = op_;
            return *it->second.buffer;
        }
        constant_bytes_ -= static_cast<int64_t>(key.bytes);
        constants_.erase(it);
    }
    evict_for(bytes);
    Constant c{host.storage(), allocate(bytes), op_};
    if (convert) {
        const std::vector<float> values = host.to_vector();
        recorder_->upload(*c.buffer, values.data(), bytes);
    } else {
        recorder_->upload(*c.buffer, host.data_ptr(), bytes);
    }
    weight_bytes_uploaded_ += static_cast<int64_t>(bytes);
    constant_bytes_ += static_cast<int64_t>(bytes);
    return *constants_.emplace(key, std::move(c)).first->second.buffer;
}

void Stream::submit() {
    recorder_->submit();
}

void Stream::settle() noexcept {
    try {
        recorder_->submit();
    } catch (...) {  // the recording is dropped: the weights uploaded in it never arrived
        constants_.clear();
        constant_bytes_ = 0;
    }
    if (!device_->lost()) return;
    try {
        reopen();
        SD_LOG_WARN("%s was lost; opened it anew (its weights upload again)",
                    device_->label().c_str());
    } catch (const std::exception& e) {  // still gone: the next use says so
        SD_LOG_ERROR("%s was lost and cannot be opened again: %s", device_->label().c_str(),
                     e.what());
    }
}

// A new logical device in place of a lost one: nothing of the old is used again (its pooled
// buffers and weights are freed; a buffer a tensor still holds is freed when it is let go).
void Stream::reopen() {
    std::shared_ptr<VulkanDevice> device = VulkanDevice::open(device_->name());
    auto recorder = std::make_unique<CommandRecorder>(device);
    const RecorderStats& old = recorder_->stats();
    retired_.submissions += old.submissions;
    retired_.dispatches += old.dispatches;
    retired_.bytes_uploaded += old.bytes_uploaded;
    retired_.bytes_downloaded += old.bytes_downloaded;
    op_buffers_.clear();
    constants_.clear();
    constant_bytes_ = 0;
    release_pool();
    recorder_ = std::move(recorder);
    device_ = std::move(device);
}

StreamStats Stream::stats() const {
    const RecorderStats& r = recorder_->stats();
    StreamStats s;
    s.submissions = retired_.submissions + r.submissions;
    s.dispatches = retired_.dispatches + r.dispatches;
    s.bytes_uploaded = retired_.bytes_uploaded + r.bytes_uploaded;
    s.bytes_downloaded = retired_.bytes_downloaded + r.bytes_downloaded;
    s.weight_bytes_uploaded = weight_bytes_uploaded_;
    s.weight_bytes_resident = constant_bytes_;
    s.device_bytes = device_bytes_;
    s.device_bytes_peak = device_bytes_peak_;
    s.cpu_fallbacks = fallbacks_;
    return s;
}

}  // namespace sd::gpu
