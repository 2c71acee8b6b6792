// Image super-resolution with an ESRGAN model file, as stable-diffusion.cpp's upscaler:
// the image in [0, 1] through the network in tiles of `tile_size` input pixels a side
// overlapping by a quarter (pipeline/tiles.h), so a large image upscales in bounded memory,
// and back to bytes as round(clamp(x, 0, 1) * 255).
#pragma once

#include <memory>
#include <string>

#include "base/cancel.h"
#include "gpu/device_tensor.h"
#include "image/image_io.h"
#include "io/model_files.h"
#include "models/esrgan.h"

namespace sd {

class Upscaler {
  public:
    // Opens and checks `path`; an sd::Error naming it when it is not an ESRGAN model.
    // tile_size <= 0: the whole image at once. `device` ("vulkan0"): each tile runs there
    // (moved in, the result back); empty: on the CPU.
    Upscaler(const std::string& path, int tile_size, Residency residency = Residency::Resident,
             const std::string& device = "");
    Upscaler(const Upscaler&) = delete;
    Upscaler& operator=(const Upscaler&) = delete;

    int scale() const { return model_.scale(); }
    const EsrganLayout& layout() const { return model_.layout(); }

    // An 8-bit image (grey, RGB or RGBA: the colour channels are used) -> RGB, scale x.
    // A cancelled `cancel` stops it between tiles or inside a layer (sd::Cancelled).
    image::Image upscale(const image::Image& image, const CancelToken* cancel = nullptr) const;
    // [1, 3, H, W] in [0, 1] -> [1, 3, H * scale, W * scale] (not clamped).
    Tensor upscale_tensor(const Tensor& image01) const;

  private:
    Tensor forward(const Tensor& tile) const;

    ModelFiles files_;  // the mapped file the weights view
    Esrgan model_;
    int tile_size_;
    std::shared_ptr<gpu::Stream> stream_;  // where the network runs; null: the CPU
};

}  // namespace sd
