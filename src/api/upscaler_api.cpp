// The C API's ESRGAN upscaler: upscaler_ctx_t owns a loaded model (pipeline/upscaler.h).
// Entry points catch what the engine throws, log it and return NULL / false.
#include <memory>
#include <mutex>

#include "api/c_images.h"
#include "api/placement.h"
#include "base/error.h"
#include "base/log.h"
#include "pipeline/run_scope.h"
#include "pipeline/upscaler.h"
#include "stable-diffusion.h"

struct upscaler_ctx_t {
    std::unique_ptr<sd::Upscaler> upscaler;
    int threads = 0;     // runscope: n_threads, applied per upscale (0: the process default)
    std::mutex running;  // one upscale at a time on a context
};

extern "C" {

upscaler_ctx_t* new_upscaler_ctx(const char* esrgan_path, bool direct, int n_threads, int tile_size,
                                 const char* backend, const char* params_backend) {
    (void)direct;  // ggml's direct convolution switch: convolutions here are always direct
    try {
        SD_CHECK(esrgan_path && *esrgan_path, "new_upscaler_ctx: no ESRGAN model path given");
        const sd::api::UpscalerPlacement placement =
            sd::api::read_upscaler_placement(backend, params_backend);
        const int threads = n_threads > 0 ? sd::threads_that_help(n_threads) : 0;  // runscope
        auto ctx = std::make_unique<upscaler_ctx_t>();
        ctx->threads = threads;
        ctx->upscaler = std::make_unique<sd::Upscaler>(esrgan_path, tile_size, placement.residency,
                                                       placement.device);
        return ctx.release();
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return nullptr;
    }
}

void free_upscaler_ctx(upscaler_ctx_t* upscaler_ctx) {
    if (!upscaler_ctx) return;
    { std::lock_guard<std::mutex> wait(upscaler_ctx->running); }
    delete upscaler_ctx;
}

// upscale_factor is not used, as in the reference: the model's own factor applies.
bool upscale(upscaler_ctx_t* upscaler_ctx, sd_image_t input_image, uint32_t upscale_factor,
             sd_image_t** images_out, int* num_images_out) {
    (void)upscale_factor;
    if (images_out) *images_out = nullptr;
    if (num_images_out) *num_images_out = 0;
    if (!upscaler_ctx || !upscaler_ctx->upscaler || !images_out || !num_images_out) {
        SD_LOG_ERROR("upscale: needs an upscaler context and both output pointers");
        return false;
    }
    try {
        std::lock_guard<std::mutex> one_at_a_time(upscaler_ctx->running);
        sd::RunOptions run;  // runscope: the context's threads, this upscale's scratch
        run.threads = upscaler_ctx->threads;
        const sd::RunScope scope(run);
        const auto input = sd::api::to_image8(input_image, "image to upscale");
        SD_CHECK(input.has_value(), "upscale: the input image has no data");
        *images_out = sd::api::to_c_images({upscaler_ctx->upscaler->upscale(*input)});
        *num_images_out = 1;
        return true;
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return false;
    }
}

int get_upscale_factor(upscaler_ctx_t* upscaler_ctx) {
    if (!upscaler_ctx || !upscaler_ctx->upscaler) return 1;
    return upscaler_ctx->upscaler->scale();
}

}  // extern "C"
