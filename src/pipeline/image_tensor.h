// 8-bit images <-> f32 tensors, as the reference converts them: pixels / 255 -> [0, 1],
// decoded images clamp((x + 1) / 2) * 255 rounded to the nearest byte.
#pragma once

#include <cstdint>
#include <vector>

#include "image/image_io.h"
#include "tensor/tensor.h"

namespace sd {

// [1, channels, H, W] in [0, 1].
Tensor image_to_tensor(const image::Image& image);
// [1, 3, H, W] in [0, 1]: grey replicated to RGB, alpha dropped.
Tensor rgb_image_to_tensor(const image::Image& image);
// [1, channels, H, W] in [0, 1] for a codec of `channels` (LatentCodec::image_channels): 3 as
// rgb_image_to_tensor; 4 keeps an image's alpha, or adds an opaque one.
Tensor color_image_to_tensor(const image::Image& image, int64_t channels);
// From [1, C, H, W] in [-1, 1] (a VAE's output) to bytes.
image::Image decoded_to_image(const Tensor& x);
// A decoded image [1, 3, H, W] as one image, a video's frames [F, 3, H, W] as F.
std::vector<image::Image> decoded_frames(const Tensor& decoded, bool video);
// From [1, C, H, W] in [0, 1] (an upscaler's output) to bytes.
image::Image unit_to_image(const Tensor& x);
// A mask image (any channel count; the first channel is used) to [1, 1, H, W] in {0, 1}:
// >= 0.5 (128 and above) is 1, "repaint here".
Tensor mask_to_tensor(const image::Image& mask);
// The mask at latent resolution: 1 where any pixel of the 8x8 cell is 1 (nearest-max).
Tensor latent_mask(const Tensor& mask, int64_t factor);

}  // namespace sd
