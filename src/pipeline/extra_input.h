// The channels an inpaint or control-latent model reads beside the noisy latent
// (ModelComponents::extra_input), as the reference builds its c_concat:
//   SD inpaint:   [latent-size mask (nearest-max), masked-image latent]           1 + C
//   FLUX.1 Fill:  [masked-image latent, the pixel mask's f x f cells as channels] C + f*f
//   FLUX.1 Canny / Depth: the control image's latent                              C
//   Wan image-to-video: [frame mask, the latent of a grey clip holding the given frames] 4 + C
// The masked image keeps the picture where the mask is 0 and is grey (0.5) where it is 1.
#pragma once

#include "pipeline/components.h"
#include "pipeline/request.h"

namespace sd {

// Refuses a request that lacks what the model's extra input is made from: an inpaint model's
// init image and mask, a control-latent model's control image. Names the options.
void check_extra_input(const ModelComponents& m, const ImageRequest& r);

// A pixel mask [1, 1, H, W] as [1, f*f, H/f, W/f]: the value at (y*f + dy, x*f + dx) goes
// to channel dy*f + dx of latent pixel (y, x) (BFL's "(h ph) (w pw) -> (ph pw) h w").
Tensor fold_mask(const Tensor& mask, int64_t factor);

// The picture an inpaint model sees: image01 where mask is 0, 0.5 where it is 1.
Tensor masked_image(const Tensor& image01, const Tensor& mask);

// What extra_input's layout needs, already in the model's latent space.
struct ExtraInputParts {
    Tensor mask;           // the pixel mask [1, 1, H, W]
    Tensor latent_mask;    // at latent size (nearest-max)
    Tensor masked_latent;  // the masked image's latent
    Tensor control_latent;
    Tensor frame_mask;   // Wan image-to-video's, video_frame_mask()
    Tensor clip_latent;  // the latent of the clip holding the given frames
};

// Wan image-to-video's frame mask [1, 4, T, h, w]: 1 on the first latent frame's 4 channels
// when a first frame is given, on the last frame's fourth when a last one is (the original's
// per-frame mask with the first frame repeated 4 times, folded 4 frames to a latent frame).
Tensor video_frame_mask(int64_t frames, int64_t h, int64_t w, bool first, bool last);

// The channels to append, in the layout's order; undefined for ExtraInput::None.
Tensor assemble_extra_input(ExtraInput kind, const ExtraInputParts& p, int64_t factor);

}  // namespace sd
