#include "api/preview_tap.h"

#include <memory>

#include "api/callbacks.h"
#include "base/log.h"
#include "pipeline/latent_preview.h"

namespace sd::api {

LatentTap preview_tap(const ModelComponents& model, const LatentCodec* tae, const LatentCodec* vae,
                      const VaeTiling& tiling, bool video) {
    const PreviewSettings settings = preview_settings();
    if (!settings.callback || settings.mode == PREVIEW_NONE) return {};
    auto previewer =
        std::make_shared<LatentPreviewer>(settings.mode, model.latent, tae, vae, tiling, video);
    if (std::string why = previewer->unavailable_reason(); !why.empty()) {
        SD_LOG_WARN("no %s previews: %s", sd_preview_name(settings.mode), why.c_str());
        return {};
    }
    LatentTap tap;
    tap.interval = settings.interval;
    tap.noisy = settings.noisy;
    tap.denoised = settings.denoised;
    tap.fn = [previewer](int step, const Tensor& latent, bool noisy) {
        try {
            std::vector<image::Image> images = previewer->render_frames(latent);
            std::vector<sd_image_t> frames;
            for (image::Image& i : images)
                frames.push_back({i.width, i.height, i.channels, i.pixels.data()});
            report_preview(step, static_cast<int>(frames.size()), frames.data(), noisy);
        } catch (const std::exception& e) {
            SD_LOG_WARN("preview of step %d failed: %s", step, e.what());  // sampling goes on
        }
    };
    return tap;
}

}  // namespace sd::api
