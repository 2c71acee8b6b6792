// The C API's importance matrix: collection during generate_image (every Linear / Conv2d
// records its input's column mean squares, src/io/imatrix.h), saving and loading the
// llama.cpp / stable-diffusion.cpp imatrix file, and its use by convert() (importance-weighted
// k-quants and iq4). One process-wide store, as in the reference library.
#include <exception>

#include "base/log.h"
#include "io/imatrix.h"
#include "stable-diffusion.h"

extern "C" {

bool load_imatrix(const char* imatrix_path) {
    if (!imatrix_path || !*imatrix_path) {
        SD_LOG_ERROR("load_imatrix: no file given");
        return false;
    }
    try {
        sd::imatrix::load(imatrix_path);
        return true;
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
    }
    return false;
}

void save_imatrix(const char* imatrix_path) {
    if (!imatrix_path || !*imatrix_path) {
        SD_LOG_ERROR("save_imatrix: no file given");
        return;
    }
    try {
        sd::imatrix::save(imatrix_path);
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
    }
}

void enable_imatrix_collection(void) {
    sd::imatrix::set_collecting(true);
    SD_LOG_INFO("imatrix: collecting activation statistics");
}

void disable_imatrix_collection(void) {
    sd::imatrix::set_collecting(false);
}

}  // extern "C"
