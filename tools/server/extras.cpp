#include "extras.h"

#include <strings.h>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>

#include "base/base64.h"
#include "image/image_resize.h"
#include "image_payload.h"
#include "json_fields.h"
#include "model_lists.h"
#include "request_error.h"
#include "result_images.h"

namespace server {
namespace {

using nlohmann::json;

struct UpscalerDeleter {
    void operator()(upscaler_ctx_t* ctx) const { free_upscaler_ctx(ctx); }
};

// The last upscaler used, kept loaded; one upscale at a time.
struct LoadedUpscaler {
    std::mutex mutex;
    std::string path;
    std::unique_ptr<upscaler_ctx_t, UpscalerDeleter> ctx;
};

LoadedUpscaler& loaded_upscaler() {
    static LoadedUpscaler loaded;
    return loaded;
}

// The model file upscaler_1 names: a model of that name in --hires-upscalers-dir, or the
// server's --upscale-model (also when upscaler_1 is absent); "" for "None".
std::string upscaler_path(const ServerState& state, const FieldReader& f) {
    const std::optional<std::string> name = f.string("upscaler_1");
    if (name && strcasecmp(name->c_str(), "None") == 0) return "";
    if (name) {
        for (const ModelFile& m : list_upscaler_models(state.defaults.hires_upscalers_dir))
            if (m.name == *name) return m.path;
        if (!state.defaults.esrgan_path.empty() &&
            std::filesystem::path(state.defaults.esrgan_path).stem() == *name)
            return state.defaults.esrgan_path;
    }
    if (!name && !state.defaults.esrgan_path.empty()) return state.defaults.esrgan_path;
    throw bad_field("upscaler_1", "'" + name.value_or("") +
                                      "' is not an upscaler model of this server (see "
                                      "/sdapi/v1/upscalers)");
}

sd::image::Image run_upscaler(const std::string& path, const sd::image::Image& input) {
    LoadedUpscaler& loaded = loaded_upscaler();
    std::lock_guard<std::mutex> one_at_a_time(loaded.mutex);
    if (!loaded.ctx || loaded.path != path) {
        loaded.ctx.reset();
        // n_threads 0: the pool the model runs on stays as it is.
        loaded.ctx.reset(new_upscaler_ctx(path.c_str(), false, 0, 128, nullptr, nullptr));
        if (!loaded.ctx)
            throw bad_field("upscaler_1", "the upscaler model '" + path + "' cannot be loaded");
        loaded.path = path;
    }
    sd_image_t view{input.width, input.height, input.channels,
                    const_cast<uint8_t*>(input.pixels.data())};
    sd_image_t* out = nullptr;
    int count = 0;
    if (!upscale(loaded.ctx.get(), view, 0, &out, &count) || count < 1)
        throw bad_field("image", "the image cannot be upscaled");
    cli::ImageList result(out, count);
    return cli::to_image(result[0]);
}

}  // namespace

json extra_single_image(const ServerState& state, const json& body) {
    FieldReader f(body);
    const std::optional<std::string> text = f.string("image");
    if (!text) throw bad_field("image", "missing: a base64 image is required");
    sd::image::Image image = decode_image_text(*text, 3, "image");
    const int mode = f.integer("resize_mode", 0, 1).value_or(0);
    const double factor = f.number("upscaling_resize", 0.01, 16.0).value_or(2.0);
    const int limit = 1 << 15;
    uint32_t width = static_cast<uint32_t>(std::lround(image.width * factor));
    uint32_t height = static_cast<uint32_t>(std::lround(image.height * factor));
    if (mode == 1) {
        width = static_cast<uint32_t>(f.integer("upscaling_resize_w", 1, limit).value_or(512));
        height = static_cast<uint32_t>(f.integer("upscaling_resize_h", 1, limit).value_or(512));
    }
    if (width < 1 || height < 1 || width > static_cast<uint32_t>(limit) ||
        height > static_cast<uint32_t>(limit))
        throw bad_field("upscaling_resize", "the result would be " + std::to_string(width) + "x" +
                                                std::to_string(height));
    const std::string path = upscaler_path(state, f);
    if (!path.empty()) image = run_upscaler(path, image);
    if (image.width != width || image.height != height) {
        const bool crop = mode == 1 && f.boolean("upscaling_crop").value_or(true);
        image =
            crop ? sd::image::fit(image, width, height) : sd::image::resize(image, width, height);
    }
    return {
        {"html_info", ""},
        {"image", sd::base64_encode(sd::image::encode_image(sd::image::Format::Png, image, ""))}};
}

}  // namespace server
