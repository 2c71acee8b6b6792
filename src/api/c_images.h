// sd_image_t <-> image::Image for the C API's entry points: inputs copied and checked,
// outputs in the library's layout (one malloc'ed array, each image's pixels malloc'ed,
// released by free_sd_images).
#pragma once

#include <optional>
#include <vector>

#include "image/image_io.h"
#include "stable-diffusion.h"

namespace sd::api {

// A copy of `img` (nothing when its data is null); an sd::Error naming `what` for a size or
// channel count that cannot be an image (1, 3 or 4 channels).
std::optional<image::Image> to_image8(const sd_image_t& img, const char* what);

// The images in the library's layout; an sd::Error (nothing leaked) when memory runs out.
sd_image_t* to_c_images(const std::vector<image::Image>& images);

}  // namespace sd::api
