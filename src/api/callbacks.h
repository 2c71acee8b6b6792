// What the pipeline calls to reach the C API user's callbacks (set with
// sd_set_progress_callback / sd_set_preview_callback). Safe to call from any thread; a
// callback that is not set makes these calls do nothing.
#pragma once

#include "stable-diffusion.h"

namespace sd::api {

// One sampling step done: `step` of `steps` (1-based), `seconds` the time that step took.
void report_progress(int step, int steps, float seconds);

struct PreviewSettings {
    sd_preview_cb_t callback = nullptr;
    enum preview_t mode = PREVIEW_NONE;
    int interval = 1;
    bool denoised = false;  // preview the denoised prediction of a step
    bool noisy = false;     // preview the noisy input of a step
    void* data = nullptr;
};

// The current preview request; callback == nullptr or mode == PREVIEW_NONE means none.
PreviewSettings preview_settings();
// Hands `frame_count` preview frames of `step` to the user's preview callback.
void report_preview(int step, int frame_count, sd_image_t* frames, bool is_noisy);

}  // namespace sd::api
