#include "pipeline/upscaler.h"

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "ops/ops.h"
#include "pipeline/device_placement.h"
#include "pipeline/image_tensor.h"
#include "pipeline/tiles.h"
#include "tensor/caching_allocator.h"

namespace sd {
namespace {

constexpr float kTileOverlap = 0.25f;  // the reference upscaler's

ModelFiles open_model(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    return files;
}

}  // namespace

Upscaler::Upscaler(const std::string& path, int tile_size, Residency residency,
                   const std::string& device)
    : files_(open_model(path)),
      model_(Esrgan::load(files_, "'" + path + "'", residency)),
      tile_size_(tile_size) {
    if (device.empty()) return;
    stream_ = gpu::open_stream(device);
    SD_LOG_INFO("upscaler on %s", device.c_str());
}

Tensor Upscaler::forward(const Tensor& tile) const {
    if (!stream_) return model_.forward(tile);
    return run_on_stream(*stream_, "upscaler call", tile,
                         [&](const Tensor& x) { return model_.forward(x); });
}

Tensor Upscaler::upscale_tensor(const Tensor& image01) const {
    SD_CHECK(image01.dim() == 4 && image01.size(0) == 1 && image01.size(1) == 3,
             "upscaling %s: expected [1, 3, H, W]", image01.describe().c_str());
    const int64_t h = image01.size(2), w = image01.size(3);
    if (tile_size_ <= 0 || (h <= tile_size_ && w <= tile_size_)) return forward(image01);
    return process_tiles(image01, model_.scale(), tile_size_, kTileOverlap,
                         [&](const Tensor& tile) { return forward(tile); });
}

image::Image Upscaler::upscale(const image::Image& image, const CancelToken* cancel) const {
    const CancelScope cancel_scope(cancel);
    const int s = model_.scale();
    SD_LOG_INFO("upscaling from %ux%u to %ux%u", image.width, image.height, image.width * s,
                image.height * s);
    const double start = now_seconds();
    Tensor x = image_to_tensor(image);
    if (x.size(1) < 3) {  // grey (and alpha): the grey channel as R, G and B
        const Tensor grey = x.narrow(1, 0, 1);
        x = concat({grey, grey, grey}, 1);
    }
    Tensor out = upscale_tensor(x.narrow(1, 0, 3).contiguous());
    CachingAllocator::instance().trim();
    SD_LOG_INFO("upscaled in %.2f s", now_seconds() - start);
    return unit_to_image(out);
}

}  // namespace sd
