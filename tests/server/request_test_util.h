// What the request tests share: the command line's defaults from its arguments, an image as a
// request sends it (a base64 PNG of one grey value), and the check of a refused field.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/base64.h"
#include "cli_options.h"
#include "image/image_io.h"
#include "request_error.h"

namespace server::test {

// Runs `f`, expecting a RequestError of `status` that names `field` (as its field and in its
// message) and, when given, holds `words` in its message.
template <class F>
void expect_request_error(F f, const std::string& field, const std::string& words = "",
                          int status = 400) {
    try {
        f();
        ADD_FAILURE() << "accepted; expected an error naming " << field;
    } catch (const server::RequestError& e) {
        EXPECT_EQ(e.status(), status) << e.what();
        EXPECT_EQ(e.field(), field) << e.what();
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

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
