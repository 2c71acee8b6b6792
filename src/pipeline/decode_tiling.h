// The decode's tiling for a generation: what the request asked for, or in the streamed
// (low-memory) mode tiles for an image above 640x640, since an untiled decode holds several
// full-resolution feature maps (about 2.6 GiB of activations at 1024x1024); smaller tiles
// for a codec whose footprint says it holds more a pixel (a video's frames share them).
#pragma once

#include <cstdint>

#include "pipeline/components.h"

namespace sd {

VaeTiling decode_tiling(const ModelComponents& model, const VaeTiling& requested, int64_t latent_h,
                        int64_t latent_w);

}  // namespace sd
