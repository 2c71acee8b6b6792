#include "result_images.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "generation_request.h"
#include "log_output.h"

namespace cli {
namespace {

struct UpscalerDeleter {
    void operator()(upscaler_ctx_t* ctx) const { free_upscaler_ctx(ctx); }
};

// Replaces `image` by its upscaled version; false when the upscaler fails.
bool upscale_once(upscaler_ctx_t* ctx, sd_image_t& image) {
    sd_image_t* out = nullptr;
    int count = 0;
    if (!upscale(ctx, image, static_cast<uint32_t>(get_upscale_factor(ctx)), &out, &count) ||
        count < 1 || !out || !out[0].data) {
        free_sd_images(out, count);
        return false;
    }
    std::free(image.data);
    image = out[0];
    out[0].data = nullptr;
    free_sd_images(out, count);
    return true;
}

}  // namespace

sd::image::Image to_image(const sd_image_t& view) {
    sd::image::Image image;
    image.width = view.width;
    image.height = view.height;
    image.channels = view.channel;
    image.pixels.assign(view.data,
                        view.data + static_cast<size_t>(view.width) * view.height * view.channel);
    return image;
}

ImageList ImageList::copy_of(const sd::image::Image& image) {
    auto* list = static_cast<sd_image_t*>(std::calloc(1, sizeof(sd_image_t)));
    auto* pixels = static_cast<uint8_t*>(std::malloc(image.pixels.size()));
    if (!list || !pixels) {
        std::free(list);
        std::free(pixels);
        throw std::bad_alloc();
    }
    std::memcpy(pixels, image.pixels.data(), image.pixels.size());
    list[0] = {image.width, image.height, image.channels, pixels};
    return ImageList(list, 1);
}

bool upscale_results(const CliParams& p, ImageList& images) {
    if (p.esrgan_path.empty() || p.upscale_repeats < 1) return true;
    const std::string backend = backend_spec(p), params_backend = params_backend_spec(p);
    std::unique_ptr<upscaler_ctx_t, UpscalerDeleter> ctx(
        new_upscaler_ctx(p.esrgan_path.c_str(), p.diffusion_conv_direct,
                         p.n_threads > 0 ? p.n_threads : sd_get_num_physical_cores(),
                         p.upscale_tile_size, backend.empty() ? nullptr : backend.c_str(),
                         params_backend.empty() ? nullptr : params_backend.c_str()));
    if (!ctx) {
        log_error("new_upscaler_ctx failed for '%s'", p.esrgan_path.c_str());
        return false;
    }
    for (int i = 0; i < images.size(); ++i) {
        if (!images[i].data) continue;
        for (int r = 0; r < p.upscale_repeats; ++r) {
            if (!upscale_once(ctx.get(), images[i])) {
                log_error("upscaling image %d failed", i);
                return false;
            }
        }
    }
    return true;
}

}  // namespace cli
