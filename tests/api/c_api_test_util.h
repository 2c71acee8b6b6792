// Helpers of the tests that drive the C API: the library's log captured while a test looks,
// an image's bytes, and one image generated.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "stable-diffusion.h"

namespace sd::test {

// The library's log lines from construction until stop() (or destruction).
struct CapturedLog {
    std::mutex mutex;
    std::string text;
    CapturedLog() {
        sd_set_log_callback(
            [](sd_log_level_t, const char* line, void* data) {
                auto* log = static_cast<CapturedLog*>(data);
                std::lock_guard<std::mutex> lock(log->mutex);
                log->text += line;
            },
            this);
    }
    ~CapturedLog() { stop(); }
    void stop() { sd_set_log_callback(nullptr, nullptr); }
    // How many times `what` was logged.
    int count(const std::string& what) {
        std::lock_guard<std::mutex> lock(mutex);
        int n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
            ++n;
        return n;
    }
};

inline std::vector<uint8_t> image_bytes(const sd_image_t& i) {
    return std::vector<uint8_t>(i.data, i.data + size_t(i.width) * i.height * i.channel);
}

// The one image generate_image makes of `p`; empty when it fails or makes another count.
inline std::vector<uint8_t> generate_one(sd_ctx_t* ctx, const sd_img_gen_params_t& p) {
    sd_image_t* images = nullptr;
    int count = 0;
    std::vector<uint8_t> out;
    if (generate_image(ctx, &p, &images, &count) && count == 1) out = image_bytes(images[0]);
    free_sd_images(images, count);
    return out;
}

}  // namespace sd::test
