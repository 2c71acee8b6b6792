// AUTOMATIC1111's /sdapi/v1/extra-single-image: a base64 image in, upscaled by an ESRGAN
// model (upscaler_1: a model in --hires-upscalers-dir by name, else --upscale-model) and
// resized to upscaling_resize x (or to upscaling_resize_w x _h with resize_mode 1), a
// base64 PNG out. Upscalers stay loaded between requests (the last one used).
#pragma once

#include <nlohmann/json.hpp>

#include "server_state.h"

namespace server {

// The response {"html_info", "image"}; a RequestError (4xx) naming the field for a bad
// image, an unknown upscaler or a model file that is not an upscaler.
nlohmann::json extra_single_image(const ServerState& state, const nlohmann::json& body);

}  // namespace server
