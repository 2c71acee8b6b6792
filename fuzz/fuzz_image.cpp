// decode_image (to 3 or 1 channels, by the input's size) and read_text over the input in
// memory, for PNG, JPEG, WebP and BMP alike; a decoded image is checked for a pixel
// buffer that matches its size and fitted to a small size as img2img inputs are.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "image/image_io.h"
#include "image/image_resize.h"

namespace {

uint64_t check(const sd::image::Image& im, uint32_t channels) {
    const uint64_t want = uint64_t{im.width} * im.height * im.channels;
    if (im.channels != channels || im.pixels.size() != want || im.width == 0 || im.height == 0) {
        std::fprintf(stderr, "FUZZ FINDING: image %ux%ux%u holds %zu bytes\n", im.width, im.height,
                     im.channels, im.pixels.size());
        std::abort();
    }
    uint64_t sum = 0;
    for (uint8_t v : im.pixels) sum += v;
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const int channels = size % 2 == 0 ? 3 : 1;
    sd::fuzz::run_one([&] {
        sd::image::Image im = sd::image::decode_image(data, size, channels, "fuzz");
        sd::fuzz::sink = check(im, channels);
        if (im.pixels.size() > (size_t{1} << 20)) return;
        // Fit to a target of 1..32 x 1..32 taken from the last bytes.
        const uint32_t w = 1 + data[size - 1] % 32, h = 1 + data[size - 2] % 32;
        sd::image::Image fitted = sd::image::fit(im, w, h);
        if (fitted.width != w || fitted.height != h) {
            std::fprintf(stderr, "FUZZ FINDING: fit to %ux%u gave %ux%u\n", w, h, fitted.width,
                         fitted.height);
            std::abort();
        }
        sd::fuzz::sink = check(fitted, channels);
    });
    sd::fuzz::run_one([&] {
        for (const auto& [key, text] : sd::image::read_text(data, size, "fuzz"))
            sd::fuzz::sink = key.size() + text.size();
    });
    return 0;
}
