#include "pipeline/taehv_codec.h"

#include "base/error.h"
#include "pipeline/taesd_codec.h"
#include "pipeline/vae_tiling.h"

namespace sd {

TaehvCodec::TaehvCodec(ModelFiles files, Taehv tae, LatentFormat format)
    : files_(std::move(files)), tae_(std::move(tae)), format_(format) {}

Tensor TaehvCodec::encode(const Tensor& image01, Rng&) const {
    if (image01.dim() == 4) {  // an image: one frame
        return to_codec_latent(format_, tae_.encode(image01));
    }
    SD_CHECK(image01.dim() == 5 && image01.size(0) == 1,
             "TAEHV encode of %s: expected an image [1, 3, H, W] or a clip [1, 3, F, H, W]",
             image01.describe().c_str());
    // Frames first throughout, [F, 3, H, W] -> [T, z, h, w]: the latent's per-channel form
    // applies to it as to a batch of images (and stays within 4-d ops on a device).
    const Tensor frames = image01.squeeze(0).permute({1, 0, 2, 3});
    const Tensor z = to_codec_latent(format_, tae_.encode(frames));
    return z.permute({1, 0, 2, 3}).unsqueeze(0).contiguous();  // [1, z, T, h, w]
}

Tensor TaehvCodec::decode(const Tensor& latent, const VaeTiling& tiling) const {
    if (latent.dim() == 4) {
        const Tensor z = to_model_latent(format_, latent);
        auto decode01 = [this](const Tensor& part) { return tae_.decode(part); };
        const Tensor image01 = tiling.enabled ? decode_tiled(decode01, z, 64, 0.5f) : decode01(z);
        return image01 * 2.0f + -1.0f;  // the loop's decoded range, [-1, 1]
    }
    SD_CHECK(latent.dim() == 5 && latent.size(0) == 1,
             "TAEHV decode of %s: expected [1, z, h, w] or [1, z, T, h, w]",
             latent.describe().c_str());
    // Frames first, [T, z, h, w], as encode: the per-channel form applies as to images.
    const Tensor z = to_model_latent(format_, latent.squeeze(0).permute({1, 0, 2, 3}));
    return tae_.decode(z) * 2.0f + -1.0f;  // [F, 3, H, W]
}

std::unique_ptr<LatentCodec> load_tiny_codec(const std::string& path, const LatentFormat& format,
                                             bool video, Residency residency) {
    ModelFiles files;
    try {
        files.add(path, ModelRole::Checkpoint);  // its errors name the file
    } catch (const Error& e) {
        fail("--taesd: %s", e.what());
    }
    const bool taehv = Taehv::is_taehv(Weights(files, "", residency));
    if (!taehv) {
        SD_CHECK(!video,
                 "--taesd %s is a TAESD (image) autoencoder; a video model's previews and "
                 "decode need a TAEHV video autoencoder (taew2_1 for Wan 2.1, taew2_2 for Wan "
                 "2.2 TI2V)",
                 path.c_str());
        return load_taesd_codec(path, format, residency);
    }
    Taehv tae = [&] {
        try {
            return Taehv::load(Weights(files, "", residency), files.has_prefix("encoder."));
        } catch (const Error& e) {
            fail("--taesd %s: %s", path.c_str(), e.what());
        }
    }();
    SD_CHECK(tae.config().latent_channels == format.channels,
             "--taesd %s: its latents have %lld channels but the model's have %lld (a TAEHV for "
             "another model?)",
             path.c_str(), (long long)tae.config().latent_channels, (long long)format.channels);
    return std::make_unique<TaehvCodec>(std::move(files), std::move(tae), format);
}

}  // namespace sd
