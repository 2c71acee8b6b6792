// Image files in and out: PNG, JPEG, WebP and BMP decoded to 8-bit RGB or grey; PNG, JPEG
// and WebP written by extension, with the generation parameters embedded where each
// format's tools look for them (PNG tEXt "parameters", a JPEG COM segment, a WebP XMP
// packet). Every malformed file is an sd::Error naming it; writes go to PATH.part and are
// renamed into place only when complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sd::image {

// Pixels row by row, `channels` bytes a pixel (3: RGB, 1: grey).
struct Image {
    uint32_t width = 0;
    uint32_t height = 0;
    uint32_t channels = 0;
    std::vector<uint8_t> pixels;

    bool empty() const { return pixels.empty(); }
};

enum class Format { Png, Jpeg, Webp, Bmp, Unknown };

const char* format_name(Format format);
// From the file name's extension (case-insensitive): .png, .jpg/.jpeg/.jpe, .webp, .bmp.
Format format_from_path(const std::string& path);
// From the first bytes of the file.
Format detect_format(const uint8_t* data, size_t size);

// Largest image accepted on read, in pixels (guards against decompression bombs).
constexpr uint64_t kMaxPixels = uint64_t{1} << 26;
constexpr uint32_t kMaxSide = 1u << 15;

// Decodes a file, recognised by its content, to `channels` (1 or 3) 8-bit channels. Alpha
// is dropped; grey from colour is (77 R + 150 G + 29 B) >> 8, grey to colour is replicated.
Image read_image(const std::string& path, int channels);
Image decode_image(const uint8_t* data, size_t size, int channels, const std::string& name);

// Encodes by `format` with the text `parameters` embedded (nothing when empty); `quality`
// (1..100) applies to JPEG and WebP.
std::vector<uint8_t> encode_image(Format format, const Image& image, const std::string& parameters,
                                  int quality = 90);
// Writes by the extension of `path` (an unknown extension is an error).
void write_image(const std::string& path, const Image& image, const std::string& parameters = "",
                 int quality = 90);

// The text an image carries: a PNG's tEXt/zTXt/iTXt chunks by keyword, a JPEG's COM
// segments ("parameters" for one written here, "comment" otherwise) and a WebP's XMP
// "parameters". Malformed containers are errors; unknown chunks are skipped.
std::map<std::string, std::string> read_text(const std::string& path);
std::map<std::string, std::string> read_text(const uint8_t* data, size_t size,
                                             const std::string& name);

// Whole file contents (an sd::Error naming the file when it cannot be read).
std::vector<uint8_t> read_file_bytes(const std::string& path, size_t max_bytes = size_t{1} << 30);

}  // namespace sd::image
