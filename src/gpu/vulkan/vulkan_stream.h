// gpu::Stream on a Vulkan device: the recorder a run's ops record into, the device memory of
// its tensors (a pool of buffers reused by size) and its resident weights.
//
// Reuse within one recording is safe: the recorder puts a global barrier between every two
// steps, so a buffer freed by one op and handed to the next is written only after every
// earlier read of it. A buffer is destroyed only when the stream goes (or its memory is needed
// for a new one), never while a recorded command may use it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/device_tensor.h"
#include "gpu/vulkan/command_recorder.h"

namespace sd::gpu {

// The device memory behind a device tensor's Storage.
class DeviceAllocation {
  public:
    DeviceAllocation(std::shared_ptr<Stream> stream, std::shared_ptr<VulkanBuffer> buffer)
        : stream_(std::move(stream)), buffer_(std::move(buffer)) {}
    Stream& stream() const { return *stream_; }
    const std::shared_ptr<Stream>& shared_stream() const { return stream_; }
    VulkanBuffer& buffer() const { return *buffer_; }
    const std::shared_ptr<VulkanBuffer>& shared_buffer() const { return buffer_; }

  private:
    std::shared_ptr<Stream> stream_;        // declared first: outlives the buffer
    std::shared_ptr<VulkanBuffer> buffer_;  // back to the stream's pool when released
};

class Stream : public std::enable_shared_from_this<Stream> {
  public:
    Stream(std::shared_ptr<VulkanDevice> device, const StreamOptions& options);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    const std::string& name() const { return device_->name(); }
    VulkanDevice& device() const { return *device_; }
    CommandRecorder& recorder() { return *recorder_; }

    // An uninitialised device tensor, contiguous.
    Tensor empty(const Shape& shape, DType dtype = DType::F32);
    // The buffer of a device tensor of this stream; throws naming `op` for a host tensor or
    // one of another stream.
    VulkanBuffer& buffer(const Tensor& t, const char* op) const;

    // Starts an op: the weights it asks for and the temporaries it keeps are held until the
    // next begin_op(), and a recording holding much staging memory is submitted first.
    void begin_op();
    // Holds a temporary device tensor's buffer until the op ends (a packed copy of a strided
    // weight, bound by the op's dispatch but dropped before it is recorded).
    void keep_for_op(const Tensor& t);
    // A host tensor (a weight, bias, mask, table) in device memory, uploaded on first use and
    // kept while the host tensor lives and the weight budget allows. as_f32 converts a plain
    // dtype to f32 (norm weights and biases); otherwise the bytes go as they are (any dtype).
    const VulkanBuffer& constant(const Tensor& host, bool as_f32);

    void submit();
    // gpu::settle: submits what was recorded; on failure forgets the weights; after a lost
    // device opens it anew (a new logical device, an empty pool: the weights upload again).
    void settle() noexcept;
    StreamStats stats() const;
    void count_fallback() { ++fallbacks_; }

  private:
    friend struct BufferRecycler;
    std::shared_ptr<VulkanBuffer> allocate(size_t bytes);
    void recycle(VulkanBuffer* buffer) noexcept;
    void release_pool() noexcept;
    void evict_for(uint64_t bytes);
    void reopen();

    std::shared_ptr<VulkanDevice> device_;
    StreamOptions options_;
    std::unique_ptr<CommandRecorder> recorder_;
    RecorderStats retired_;  // the counts of the recorders of a lost device
    std::multimap<size_t, std::unique_ptr<VulkanBuffer>> pool_;  // free buffers by size
    int64_t device_bytes_ = 0, device_bytes_peak_ = 0;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // seen by the recyclers

    struct ConstantKey {
        const Storage* storage;
        size_t offset, bytes;
        bool f32;
        bool operator==(const ConstantKey&) const = default;
    };
    struct ConstantHash {
        size_t operator()(const ConstantKey& k) const;
    };
    struct Constant {
        std::weak_ptr<Storage> storage;
        std::shared_ptr<VulkanBuffer> buffer;
        uint64_t last_use = 0;
    };
    std::unordered_map<ConstantKey, Constant, ConstantHash> constants_;
    uint64_t op_ = 1;
    std::vector<std::shared_ptr<VulkanBuffer>> op_buffers_;
    int64_t constant_bytes_ = 0, weight_bytes_uploaded_ = 0, fallbacks_ = 0;
};

}  // namespace sd::gpu
