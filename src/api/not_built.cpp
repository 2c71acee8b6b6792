// The C API entry points whose engine parts are not built yet (ADetailer, ggml graph
// callbacks): each logs one line naming the feature and fails; none pretends to
// succeed.
#include "base/log.h"
#include "stable-diffusion.h"

namespace {

void not_built(const char* what) {
    SD_LOG_ERROR("%s is not built yet", what);
}

void clear_outputs(sd_image_t** images_out, int* num_images_out) {
    if (images_out) *images_out = nullptr;
    if (num_images_out) *num_images_out = 0;
}

}  // namespace

extern "C" {

adetailer_ctx_t* new_adetailer_ctx(const char*, int, const char*, const char*) {
    not_built("new_adetailer_ctx (ADetailer)");
    return nullptr;
}

void free_adetailer_ctx(adetailer_ctx_t*) {}

bool adetail_image(adetailer_ctx_t*, sd_ctx_t*, sd_image_t, const sd_adetailer_params_t*,
                   const sd_img_gen_params_t*, sd_image_t** images_out, int* num_images_out) {
    clear_outputs(images_out, num_images_out);
    not_built("adetail_image (ADetailer)");
    return false;
}

// The callback sees ggml graph nodes, which this engine does not have; clearing it is fine.
void sd_set_backend_eval_callback(sd_graph_eval_callback_t cb, void*) {
    if (cb) not_built("sd_set_backend_eval_callback (ggml graph evaluation callbacks)");
}

}  // extern "C"
