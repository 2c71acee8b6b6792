#include "pipeline/latent_preview.h"

#include <algorithm>

#include "base/error.h"
#include "pipeline/image_tensor.h"

namespace sd {

image::Image project_latent_rgb(const Tensor& latent, const LatentRgbProjection& rgb) {
    SD_CHECK(rgb.weights != nullptr, "no latent to RGB projection for this model");
    SD_CHECK(latent.dim() == 4 && latent.size(0) == 1,
             "latent preview of %s: expected [1, C, h, w]", latent.describe().c_str());
    const Tensor x = latent.contiguous();
    const int64_t channels = x.size(1), h = x.size(2), w = x.size(3), plane = h * w;
    image::Image out;
    out.width = static_cast<uint32_t>(w);
    out.height = static_cast<uint32_t>(h);
    out.channels = 3;
    out.pixels.resize(static_cast<size_t>(plane * 3));
    const float* p = x.data<float>();
    for (int64_t i = 0; i < plane; ++i) {
        for (int k = 0; k < 3; ++k) {
            float v = rgb.bias[k];
            for (int64_t c = 0; c < channels; ++c) v += p[c * plane + i] * rgb.weights[c][k];
            v = std::clamp(v * 0.5f + 0.5f, 0.0f, 1.0f);
            out.pixels[static_cast<size_t>(i * 3 + k)] = static_cast<uint8_t>(v * 255.0f);
        }
    }
    return out;
}

LatentPreviewer::LatentPreviewer(preview_t mode, const LatentFormat& format, const LatentCodec* tae,
                                 const LatentCodec* vae, const VaeTiling& tiling, bool video)
    : mode_(mode), format_(format), tae_(tae), vae_(vae), tiling_(tiling), video_(video) {}

std::string LatentPreviewer::unavailable_reason() const {
    switch (mode_) {
        case PREVIEW_PROJ:
            return format_.rgb.weights ? "" : "no latent to RGB projection is known for this model";
        case PREVIEW_TAE:
            if (tae_) return "";
            return video_ ? "the tae preview of a video needs TAEHV (--taesd taew2_1.safetensors)"
                          : "the tae preview needs TAESD (--taesd)";
        case PREVIEW_VAE:
            return vae_ ? "" : "the vae preview needs the model's VAE";
        default:
            return "no preview mode";
    }
}

image::Image LatentPreviewer::render(const Tensor& latent) const {
    if (mode_ == PREVIEW_PROJ) return project_latent_rgb(latent, format_.rgb);
    const LatentCodec* codec = mode_ == PREVIEW_TAE ? tae_ : vae_;
    SD_CHECK(codec != nullptr, "%s", unavailable_reason().c_str());
    return decoded_to_image(codec->decode(to_codec_latent(format_, latent), tiling_));
}

std::vector<image::Image> LatentPreviewer::render_frames(const Tensor& latent) const {
    if (latent.dim() != 5) return {render(latent)};
    // A latent frame alone: the projection's frames, and Qwen-Image-Layered's (an image
    // request with frames: each its own picture, not a clip's).
    if (mode_ == PREVIEW_PROJ || !video_) {
        std::vector<image::Image> frames;
        const int64_t C = latent.size(1), h = latent.size(3), w = latent.size(4);
        for (int64_t t = 0; t < latent.size(2); ++t)
            frames.push_back(render(latent.narrow(2, t, 1).contiguous().view({1, C, h, w})));
        return frames;
    }
    const LatentCodec* codec = mode_ == PREVIEW_TAE ? tae_ : mode_ == PREVIEW_VAE ? vae_ : nullptr;
    SD_CHECK(codec != nullptr, "%s", unavailable_reason().c_str());
    return decoded_frames(codec->decode(to_codec_latent(format_, latent), tiling_), true);
}

}  // namespace sd
