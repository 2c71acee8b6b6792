// Images inside requests: base64 text (raw or a data URL "data:image/png;base64,...") in
// JSON fields, or the bytes of a multipart file. Every unreadable payload is a RequestError
// naming its field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "image/image_io.h"

namespace server {

// Decodes a PNG, JPEG, WebP or BMP to `channels` (1 or 3) channels.
sd::image::Image decode_image_bytes(const uint8_t* data, size_t size, int channels,
                                    const std::string& field);
// The same from base64 text or a base64 data URL.
sd::image::Image decode_image_text(std::string_view text, int channels, const std::string& field);

}  // namespace server
