// gpu/device_tensor.h on Vulkan.
#include "gpu/device_tensor.h"

#include <algorithm>

#include "base/error.h"
#include "gpu/device_ops.h"
#include "gpu/vulkan/vulkan_stream.h"

namespace sd::gpu {

std::shared_ptr<Stream> open_stream(const std::string& name, const StreamOptions& options) {
    set_device_copy([](const Tensor& t) { return on_device::clone(t); });
    return std::make_shared<Stream>(VulkanDevice::open(name), options);
}

const std::string& stream_device_name(const Stream& stream) {
    return stream.name();
}
StreamStats stream_stats(const Stream& stream) {
    return stream.stats();
}
void synchronize(Stream& stream) {
    stream.submit();
}
void settle(Stream& stream) noexcept {
    stream.settle();
}

std::shared_ptr<Stream> stream_of(const Tensor& t) {
    if (!on_device(t)) return nullptr;
    return t.storage()->allocation()->shared_stream();
}

Tensor empty_like_place(const Tensor& like, const Shape& shape, DType dtype) {
    if (!on_device(like)) return Tensor::empty(shape, dtype);
    return like.storage()->allocation()->stream().empty(shape, dtype);
}

Tensor placed_like(const Tensor& host, const Tensor& like) {
    if (!on_device(like)) return host;
    return to_device(host, like.storage()->allocation()->stream());
}

Tensor to_device(const Tensor& t, Stream& stream) {
    SD_CHECK(t.defined(), "to_device of an undefined tensor");
    if (on_device(t)) {
        SD_CHECK(&t.storage()->allocation()->stream() == &stream,
                 "to_device: %s is on another stream (%s)", t.describe().c_str(),
                 t.storage()->device_name().c_str());
        return t;
    }
    SD_CHECK(!is_quantized(t.dtype()), "to_device: %s: block-quant tensors go as weights",
             t.describe().c_str());
    const Tensor host = t.contiguous();
    Tensor out = stream.empty(host.shape(), host.dtype());
    stream.recorder().upload(stream.buffer(out, "to_device"), host.data_ptr(), host.nbytes());
    return out;
}

namespace {

// Records t's download into host memory (contiguous) on its stream, which it returns.
Stream& record_download(const Tensor& t, Tensor& out) {
    Stream& stream = t.storage()->allocation()->stream();
    const Tensor packed = t.is_contiguous() ? t : on_device::contiguous(t);
    out = Tensor::empty(t.shape(), t.dtype());
    stream.recorder().download(stream.buffer(packed, "to_host"), out.data_ptr(), out.nbytes(),
                               row_bytes(packed.dtype(), packed.offset()));
    return stream;
}

}  // namespace

Tensor to_host(const Tensor& t) {
    if (!on_device(t)) return t;
    Tensor out;
    record_download(t, out).submit();
    return out;
}

std::vector<Tensor> to_host(const std::vector<Tensor>& tensors) {
    std::vector<Tensor> out = tensors;
    std::vector<Stream*> streams;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (!on_device(tensors[i])) continue;
        Stream& s = record_download(tensors[i], out[i]);
        if (std::find(streams.begin(), streams.end(), &s) == streams.end()) streams.push_back(&s);
    }
    for (Stream* s : streams) s->submit();
    return out;
}

}  // namespace sd::gpu
