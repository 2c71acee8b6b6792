#include "pipeline/extra_input.h"

#include <algorithm>

#include "base/error.h"
#include "ops/ops.h"

namespace sd {

void check_extra_input(const ModelComponents& m, const ImageRequest& r) {
    switch (m.extra_input) {
        case ExtraInput::MaskedLatentAndPixelMask:
            SD_CHECK(
                r.init_image && r.mask_image,
                "%s inpaints: it needs an init image (-i, init_image) and a mask (--mask, "
                "mask_image); %s given",
                m.family_name.c_str(),
                r.init_image ? "no mask is" : (r.mask_image ? "no init image is" : "neither is"));
            return;
        case ExtraInput::ControlLatent:
            SD_CHECK(r.control_image.has_value(),
                     "%s is conditioned on a control image: give one (--control-image, "
                     "control_image; --canny makes Canny edges of it)",
                     m.family_name.c_str());
            return;
        case ExtraInput::FrameMaskAndClipLatent:  // made with or without the frames
            SD_CHECK(r.frames > 0,
                     "%s is an image-to-video model: it makes videos (-M vid_gen, "
                     "generate_video), not images",
                     m.family_name.c_str());
            return;
        case ExtraInput::None:
        case ExtraInput::MaskAndMaskedLatent:
            return;
    }
}

Tensor video_frame_mask(int64_t frames, int64_t h, int64_t w, bool first, bool last) {
    std::vector<float> mask(static_cast<size_t>(4 * frames * h * w), 0.0f);
    const int64_t plane = h * w;
    auto fill = [&](int64_t channel, int64_t frame) {
        std::fill_n(mask.begin() + (channel * frames + frame) * plane, plane, 1.0f);
    };
    if (first)
        for (int64_t c = 0; c < 4; ++c) fill(c, 0);
    if (last) fill(3, frames - 1);
    return Tensor::from_vector({1, 4, frames, h, w}, mask);
}

Tensor fold_mask(const Tensor& mask, int64_t factor) {
    SD_CHECK(mask.dim() == 4 && mask.size(0) == 1 && mask.size(1) == 1 &&
                 mask.size(2) % factor == 0 && mask.size(3) % factor == 0,
             "fold_mask: mask %s is not [1, 1, H, W] with sides multiples of %lld",
             mask.describe().c_str(), (long long)factor);
    const int64_t h = mask.size(2) / factor, w = mask.size(3) / factor;
    // [h, dy, w, dx] -> [dy, dx, h, w]
    return mask.contiguous()
        .view({h, factor, w, factor})
        .permute({1, 3, 0, 2})
        .contiguous()
        .view({1, factor * factor, h, w});
}

Tensor masked_image(const Tensor& image01, const Tensor& mask) {
    const Tensor keep = add_scalar(mask * -1.0f, 1.0f);
    return add_scalar(keep * add_scalar(image01, -0.5f), 0.5f);
}

Tensor assemble_extra_input(ExtraInput kind, const ExtraInputParts& p, int64_t factor) {
    switch (kind) {
        case ExtraInput::MaskAndMaskedLatent:
            return concat({p.latent_mask, p.masked_latent}, 1);
        case ExtraInput::MaskedLatentAndPixelMask:
            return concat({p.masked_latent, fold_mask(p.mask, factor)}, 1);
        case ExtraInput::ControlLatent:
            return p.control_latent;
        case ExtraInput::FrameMaskAndClipLatent:
            return concat({p.frame_mask, p.clip_latent}, 1);
        case ExtraInput::None:
            break;
    }
    return {};
}

}  // namespace sd
