// The C API entry points whose engine parts are not built yet (video generation, the
// ESRGAN upscaler, the Canny preprocessor): each logs that and fails cleanly.
#include "base/log.h"
#include "stable-diffusion.h"

namespace {

void not_built(const char* what) {
    SD_LOG_ERROR("%s is not built yet", what);
}

}  // namespace

extern "C" {

bool generate_video(sd_ctx_t*, const sd_vid_gen_params_t*, sd_image_t** frames_out,
                    int* num_frames_out, sd_audio_t** audio_out) {
    if (frames_out) *frames_out = nullptr;
    if (num_frames_out) *num_frames_out = 0;
    if (audio_out) *audio_out = nullptr;
    not_built("generate_video (video generation)");
    return false;
}

upscaler_ctx_t* new_upscaler_ctx(const char*, bool, bool, int, int, const char*, const char*) {
    not_built("new_upscaler_ctx (ESRGAN upscaling)");
    return nullptr;
}

void free_upscaler_ctx(upscaler_ctx_t*) {}

bool upscale(upscaler_ctx_t*, sd_image_t, uint32_t, sd_image_t** images_out, int* num_images_out) {
    if (images_out) *images_out = nullptr;
    if (num_images_out) *num_images_out = 0;
    not_built("upscale (ESRGAN upscaling)");
    return false;
}

int get_upscale_factor(upscaler_ctx_t*) {
    return 1;
}

bool preprocess_canny(sd_image_t, float, float, float, float, bool) {
    not_built("preprocess_canny (the Canny edge preprocessor)");
    return false;
}

}  // extern "C"
