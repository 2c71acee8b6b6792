#include "pipeline/taesd_codec.h"

#include "base/error.h"
#include "pipeline/vae_tiling.h"

namespace sd {

TaesdCodec::TaesdCodec(ModelFiles files, Taesd tae, LatentFormat format)
    : files_(std::move(files)), tae_(std::move(tae)), format_(format) {}

Tensor TaesdCodec::encode(const Tensor& image01, Rng&) const {
    return to_codec_latent(format_, tae_.encode(image01));
}

Tensor TaesdCodec::decode(const Tensor& latent, const VaeTiling& tiling) const {
    const Tensor z = to_model_latent(format_, latent);
    auto decode01 = [this](const Tensor& part) { return tae_.decode(part); };
    const Tensor image01 = tiling.enabled ? decode_tiled(decode01, z, 64, 0.5f) : decode01(z);
    return image01 * 2.0f + -1.0f;  // the loop's decoded range, [-1, 1]
}

std::unique_ptr<TaesdCodec> load_taesd_codec(const std::string& path, const LatentFormat& format,
                                             Residency residency) {
    ModelFiles files;
    try {
        files.add(path, ModelRole::Checkpoint);  // its errors name the file
    } catch (const Error& e) {
        fail("--taesd: %s", e.what());
    }
    Taesd tae = [&] {
        try {
            return Taesd::load(Weights(files, "", residency), files.has_prefix("encoder.layers."));
        } catch (const Error& e) {
            fail("--taesd %s: %s", path.c_str(), e.what());
        }
    }();
    SD_CHECK(tae.config().latent_channels == format.channels,
             "--taesd %s: its latents have %lld channels but the model's have %lld (a TAESD for "
             "another model family?)",
             path.c_str(), (long long)tae.config().latent_channels, (long long)format.channels);
    return std::make_unique<TaesdCodec>(std::move(files), std::move(tae), format);
}

}  // namespace sd
