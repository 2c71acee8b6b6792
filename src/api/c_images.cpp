#include "api/c_images.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"

namespace sd::api {

std::optional<image::Image> to_image8(const sd_image_t& img, const char* what) {
    if (img.data == nullptr) return std::nullopt;
    SD_CHECK(img.width > 0 && img.height > 0 &&
                 (img.channel == 1 || img.channel == 3 || img.channel == 4),
             "%s of %ux%u with %u channels: expected 1, 3 or 4 channels", what, img.width,
             img.height, img.channel);
    image::Image out;
    out.width = img.width;
    out.height = img.height;
    out.channels = img.channel;
    out.pixels.assign(img.data,
                      img.data + static_cast<size_t>(img.width) * img.height * img.channel);
    return out;
}

sd_image_t* to_c_images(const std::vector<image::Image>& images) {
    auto* out = static_cast<sd_image_t*>(std::calloc(images.size(), sizeof(sd_image_t)));
    SD_CHECK(out != nullptr, "out of memory for %zu result images", images.size());
    for (size_t i = 0; i < images.size(); ++i) {
        const image::Image& img = images[i];
        out[i].width = img.width;
        out[i].height = img.height;
        out[i].channel = img.channels;
        out[i].data = static_cast<uint8_t*>(std::malloc(img.pixels.size()));
        if (!out[i].data) {
            free_sd_images(out, static_cast<int>(i));
            fail("out of memory for a %ux%u result image", img.width, img.height);
        }
        std::copy(img.pixels.begin(), img.pixels.end(), out[i].data);
    }
    return out;
}

}  // namespace sd::api
