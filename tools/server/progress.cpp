#include "progress.h"

namespace server {

ProgressRelay::ProgressRelay(sd_ctx_t* ctx) : ctx_(ctx) {
    sd_set_progress_callback(on_progress, this);
}

ProgressRelay::~ProgressRelay() {
    sd_set_progress_callback(nullptr, nullptr);
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
