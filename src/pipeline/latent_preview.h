// Pictures of the latents while sampling, as stable-diffusion.cpp's preview_image makes
// them: `proj` maps a latent linearly to RGB at latent resolution (the family's
// LatentRgbProjection), `tae` and `vae` decode it to full size with TAESD or the VAE.
#pragma once

#include <string>
#include <vector>

#include "image/image_io.h"
#include "pipeline/components.h"
#include "stable-diffusion.h"

namespace sd {

// A model latent [1, C, h, w] -> RGB h x w: (rgb * 0.5 + 0.5) clamped to [0, 1], times 255
// truncated to a byte, as the reference's preview_latent_image.
image::Image project_latent_rgb(const Tensor& latent, const LatentRgbProjection& rgb);

class LatentPreviewer {
  public:
    // `tae` / `vae`: the decoders the context has (nullptr: none); they must outlive this.
    // `video`: the latents are a video's [1, C, T, h, w].
    LatentPreviewer(preview_t mode, const LatentFormat& format, const LatentCodec* tae,
                    const LatentCodec* vae, const VaeTiling& tiling, bool video = false);

    // Why this mode cannot preview this model ("" when it can).
    std::string unavailable_reason() const;
    // The preview of a model latent [1, C, h, w]; check unavailable_reason() first.
    image::Image render(const Tensor& latent) const;
    // An image's preview, or a video latent's [1, C, T, h, w] frames: one a latent frame for
    // proj (as the reference), every frame for vae. Frames of an image request (`video`
    // false: Qwen-Image-Layered's layers) are previewed one by one, as they are decoded.
    std::vector<image::Image> render_frames(const Tensor& latent) const;

  private:
    preview_t mode_;
    LatentFormat format_;
    const LatentCodec* tae_;
    const LatentCodec* vae_;
    VaeTiling tiling_;
    bool video_;
};

}  // namespace sd
