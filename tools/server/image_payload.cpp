#include "image_payload.h"

#include <exception>

#include "base/base64.h"
#include "request_error.h"

namespace server {
namespace {

// The base64 part of a data URL, or the text itself.
std::string_view base64_part(std::string_view text, const std::string& field) {
    if (text.substr(0, 5) != "data:") return text;
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos) throw bad_field(field, "the data URL has no ','");
    const std::string_view header = text.substr(0, comma);
    if (header.size() < 7 || header.substr(header.size() - 7) != ";base64")
        throw bad_field(field, "only base64 data URLs are accepted (data:image/png;base64,...)");
    return text.substr(comma + 1);
}

}  // namespace

sd::image::Image decode_image_bytes(const uint8_t* data, size_t size, int channels,
                                    const std::string& field) {
    if (size == 0) throw bad_field(field, "the image is empty");
    if (sd::image::detect_format(data, size) == sd::image::Format::Unknown)
        throw bad_field(field, "not a PNG, JPEG, WebP or BMP image");
    try {
        return sd::image::decode_image(data, size, channels, field);
    } catch (const std::exception& e) {
        throw bad_field(field, std::string("the image cannot be decoded: ") + e.what());
    }
}

sd::image::Image decode_image_text(std::string_view text, int channels, const std::string& field) {
    if (text.empty()) throw bad_field(field, "the image is empty");
    const auto bytes = sd::base64_decode(base64_part(text, field));
    if (!bytes) throw bad_field(field, "not valid base64");
    return decode_image_bytes(bytes->data(), bytes->size(), channels, field);
}

}  // namespace server
