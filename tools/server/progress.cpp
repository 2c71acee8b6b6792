#include "progress.h"

#include "base/base64.h"
#include "image/image_io.h"
#include "result_images.h"

namespace server {

ProgressRelay::ProgressRelay(sd_ctx_t* ctx, const PreviewOptions& preview) : ctx_(ctx) {
    sd_set_progress_callback(on_progress, this);
    if (preview.mode != PREVIEW_NONE)
        sd_set_preview_callback(on_preview, preview.mode, preview.interval, !preview.noisy,
                                preview.noisy, this);
}

ProgressRelay::~ProgressRelay() {
    sd_set_progress_callback(nullptr, nullptr);
    sd_set_preview_callback(nullptr, PREVIEW_NONE, 1, false, false, nullptr);
}

void ProgressRelay::on_preview(int step, int frame_count, sd_image_t* frames, bool, void* data) {
    auto* relay = static_cast<ProgressRelay*>(data);
    const RunHooks* hooks = relay->hooks_.load();
    if (!hooks || !hooks->on_preview || frame_count < 1 || !frames || !frames[0].data) return;
    const sd_image_t& f = frames[0];
    JobPreview preview;
    preview.step = step;
    preview.width = f.width;
    preview.height = f.height;
    preview.png_b64 = sd::base64_encode(
        sd::image::encode_image(sd::image::Format::Png, cli::to_image(f), "", 100));
    hooks->on_preview(std::move(preview));
}

void ProgressRelay::on_progress(int step, int steps, float, void* data) {
    auto* relay = static_cast<ProgressRelay*>(data);
    const RunHooks* hooks = relay->hooks_.load();
    if (!hooks) return;
    if (hooks->on_step) hooks->on_step(step, steps);
    if (hooks->cancelled && hooks->cancelled->load())
        sd_cancel_generation(relay->ctx_, SD_CANCEL_ALL);
}

ProgressRelay::Scope::Scope(ProgressRelay& relay, const RunHooks& hooks) : relay_(relay) {
    relay_.hooks_ = &hooks;
}

ProgressRelay::Scope::~Scope() {
    relay_.hooks_ = nullptr;
}

}  // namespace server
