// Fitting an input image to the requested size as the reference program does: crop the
// centre to the target aspect ratio, then resample with a box filter in linear light.
#pragma once

#include "image/image_io.h"

namespace sd::image {

// The centre crop of `image` with the aspect ratio width:height.
Image crop_to_aspect(const Image& image, uint32_t width, uint32_t height);
// Box-filter resampling to width x height (sRGB decoded to linear and back).
Image resize(const Image& image, uint32_t width, uint32_t height);
// crop_to_aspect then resize; returns the image unchanged when it already has that size.
Image fit(const Image& image, uint32_t width, uint32_t height);

}  // namespace sd::image
