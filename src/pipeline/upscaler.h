// Image super-resolution with an ESRGAN model file, as stable-diffusion.cpp's upscaler:
// the image in [0, 1] through the network in tiles of `tile_size` input pixels a side
// overlapping by a quarter (pipeline/tiles.h), so a large image upscales in bounded memory,
// and back to bytes as round(clamp(x, 0, 1) * 255).
#pragma once

#include <string>

#include "base/cancel.h"
#include "image/image_io.h"
#include "io/model_files.h"
#include "models/esrgan.h"

namespace sd {

class Upscaler {
  public:
    // Opens and checks `path`; an sd::Error naming it when it is not an ESRGAN model.
    // tile_size <= 0: the whole image at once.
    Upscaler(const std::string& path, int tile_size, Residency residency = Residency::Resident);
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
    ModelFiles files_;  // the mapped file the weights view
    Esrgan model_;
    int tile_size_;
};

}  // namespace sd
