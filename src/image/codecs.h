// The per-format codecs behind image_io.h (internal to src/image). Decoders return the
// file's own layout (1, 3 or 4 channels, 8-bit); image_io converts to what was asked for.
// Each throws sd::Error with a message naming `name`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "image/image_io.h"

namespace sd::image::detail {

Image decode_png(const uint8_t* data, size_t size, const std::string& name);
Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name);
Image decode_webp(const uint8_t* data, size_t size, const std::string& name);
Image decode_bmp(const uint8_t* data, size_t size, const std::string& name);

// `image` has 1, 3 or 4 channels.
std::vector<uint8_t> encode_png(const Image& image, const std::string& parameters);
std::vector<uint8_t> encode_jpeg(const Image& image, const std::string& parameters, int quality);
std::vector<uint8_t> encode_webp(const Image& image, const std::string& parameters, int quality);
// BMP has no place for text: the parameters are not written.
std::vector<uint8_t> encode_bmp(const Image& image);

std::map<std::string, std::string> png_text(const uint8_t* data, size_t size,
                                            const std::string& name);
std::map<std::string, std::string> jpeg_text(const uint8_t* data, size_t size,
                                             const std::string& name);
std::map<std::string, std::string> webp_text(const uint8_t* data, size_t size,
                                             const std::string& name);

// Checks decoded dimensions against kMaxSide / kMaxPixels.
void check_dimensions(uint64_t width, uint64_t height, const std::string& name);

// The XMP packet the WebP writer embeds, and the parameters read back from one.
std::string parameters_xmp(const std::string& parameters);
std::string parameters_from_xmp(const std::string& xmp);

}  // namespace sd::image::detail
