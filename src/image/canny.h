// The Canny edge preprocessor of the reference program (its preprocess_canny, for
// ControlNet hints), step for step and with its quirks, so that the same image gives the
// same edge map: grey (0.2989 R + 0.5870 G + 0.1140 B), a 5x5 Gaussian blur (sigma 1.4,
// not normalised), Sobel gradients, magnitude scaled to a maximum of 1, non-maximum
// suppression, double threshold and one raster pass of hysteresis. The convolutions round
// their inputs and kernels to f16 as the reference's do.
#pragma once

#include "image/image_io.h"

namespace sd::image {

struct CannyOptions {
    float high_threshold = 0.08f;  // strong: at least this fraction of the largest value
    float low_threshold = 0.08f;   // weak: at least this fraction of the high threshold
    float weak = 0.8f;             // the value of weak edges (kept when next to a strong one)
    float strong = 1.0f;           // the value of strong edges
    bool inverse = false;          // dark edges on white
};

// Replaces `image`'s colour channels (1, 3, or 4 with alpha kept) by its edge map.
void canny(Image& image, const CannyOptions& options = {});

}  // namespace sd::image
