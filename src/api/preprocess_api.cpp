// preprocess_canny: the reference program's Canny edge preprocessor (image/canny.h) on a
// C image, in place, for ControlNet hints.
#include <algorithm>
#include <exception>

#include "base/log.h"
#include "image/canny.h"
#include "stable-diffusion.h"

extern "C" {

bool preprocess_canny(sd_image_t image, float high_threshold, float low_threshold, float weak,
                      float strong, bool inverse) {
    if (!image.data || image.width == 0 || image.height == 0) {
        SD_LOG_ERROR("preprocess_canny: no image given");
        return false;
    }
    try {
        sd::image::Image img;
        img.width = image.width;
        img.height = image.height;
        img.channels = image.channel;
        const size_t bytes = static_cast<size_t>(image.width) * image.height * image.channel;
        img.pixels.assign(image.data, image.data + bytes);
        sd::image::canny(img, {high_threshold, low_threshold, weak, strong, inverse});
        std::copy(img.pixels.begin(), img.pixels.end(), image.data);
        return true;
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
        return false;
    }
}

}  // extern "C"
