// What the request tests share: the command line's defaults from its arguments, and an image
// as a request sends it (a base64 PNG of one grey value).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/base64.h"
#include "cli_options.h"
#include "image/image_io.h"

namespace server::test {

inline cli::CliParams defaults_from(std::vector<const char*> args) {
    args.insert(args.begin(), "sd-server");
    cli::CliParams p;
    cli::parse_command_line(static_cast<int>(args.size()), args.data(), p);
    return p;
}

inline std::string png_b64(uint32_t w, uint32_t h, uint8_t value = 128, uint32_t channels = 3) {
    sd::image::Image image;
    image.width = w;
    image.height = h;
    image.channels = channels;
    image.pixels.assign(static_cast<size_t>(w) * h * channels, value);
    return sd::base64_encode(sd::image::encode_image(sd::image::Format::Png, image, ""));
}

}  // namespace server::test
