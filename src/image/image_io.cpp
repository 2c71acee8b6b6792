#include "image/image_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "base/log.h"
#include "image/codecs.h"
#include "io/file_output.h"

namespace sd::image {
namespace {

std::string lower_extension(const std::string& path) {
    size_t slash = path.find_last_of("/\\");
    size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    std::string ext = path.substr(dot);
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ext;
}

uint8_t luma(const uint8_t* rgb) {
    return static_cast<uint8_t>((77 * rgb[0] + 150 * rgb[1] + 29 * rgb[2]) >> 8);
}

// From 1, 3 or 4 channels to 1 or 3.
Image convert_channels(Image in, int channels) {
    if (in.channels == static_cast<uint32_t>(channels)) return in;
    const size_t n = static_cast<size_t>(in.width) * in.height;
    Image out;
    out.width = in.width;
    out.height = in.height;
    out.channels = static_cast<uint32_t>(channels);
    out.pixels.resize(n * static_cast<size_t>(channels));
    const uint8_t* src = in.pixels.data();
    uint8_t* dst = out.pixels.data();
    const uint32_t c = in.channels;
    for (size_t i = 0; i < n; ++i, src += c) {
        if (channels == 1) {
            dst[i] = c == 1 ? src[0] : luma(src);
        } else if (c == 1) {
            dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[0];
        } else {
            std::memcpy(dst + 3 * i, src, 3);
        }
    }
    return out;
}

void check_encodable(const Image& image) {
    if (image.width == 0 || image.height == 0)
        fail("cannot encode an empty image (%ux%u)", image.width, image.height);
    if (image.channels != 1 && image.channels != 3 && image.channels != 4)
        fail("cannot encode an image with %u channels (1, 3 or 4 expected)", image.channels);
    size_t bytes = static_cast<size_t>(image.width) * image.height * image.channels;
    if (image.pixels.size() != bytes)
        fail("image buffer holds %zu bytes, %ux%ux%u needs %zu", image.pixels.size(), image.width,
             image.height, image.channels, bytes);
}

}  // namespace

const char* format_name(Format format) {
    switch (format) {
        case Format::Png:
            return "PNG";
        case Format::Jpeg:
            return "JPEG";
        case Format::Webp:
            return "WEBP";
        case Format::Bmp:
            return "BMP";
        case Format::Unknown:
            break;
    }
    return "unknown";
}

Format format_from_path(const std::string& path) {
    const std::string ext = lower_extension(path);
    if (ext == ".png") return Format::Png;
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".jpe") return Format::Jpeg;
    if (ext == ".webp") return Format::Webp;
    if (ext == ".bmp") return Format::Bmp;
    return Format::Unknown;
}

Format detect_format(const uint8_t* data, size_t size) {
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (size >= 8 && std::memcmp(data, png_sig, 8) == 0) return Format::Png;
    if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) return Format::Jpeg;
    if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0)
        return Format::Webp;
    if (size >= 2 && data[0] == 'B' && data[1] == 'M') return Format::Bmp;
    return Format::Unknown;
}

std::vector<uint8_t> read_file_bytes(const std::string& path, size_t max_bytes) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail("'%s' is a folder, not an image file", path.c_str());
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!f) fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    std::vector<uint8_t> bytes;
    uint8_t buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), f.get())) > 0) {
        if (bytes.size() + n > max_bytes)
            fail("'%s' is larger than %zu bytes; not reading it", path.c_str(), max_bytes);
        bytes.insert(bytes.end(), buffer, buffer + n);
    }
    if (std::ferror(f.get())) fail("reading '%s' failed: %s", path.c_str(), std::strerror(errno));
    return bytes;
}

Image decode_image(const uint8_t* data, size_t size, int channels, const std::string& name) {
    if (channels != 1 && channels != 3)
        fail("%s: cannot decode to %d channels", name.c_str(), channels);
    if (size == 0) fail("%s: empty file, not an image", name.c_str());
    Image image;
    switch (detect_format(data, size)) {
        case Format::Png:
            image = detail::decode_png(data, size, name);
            break;
        case Format::Jpeg:
            image = detail::decode_jpeg(data, size, name);
            break;
        case Format::Webp:
            image = detail::decode_webp(data, size, name);
            break;
        case Format::Bmp:
            image = detail::decode_bmp(data, size, name);
            break;
        case Format::Unknown:
            fail("%s: not a PNG, JPEG, WebP or BMP image", name.c_str());
    }
    return convert_channels(std::move(image), channels);
}

Image read_image(const std::string& path, int channels) {
    std::vector<uint8_t> bytes = read_file_bytes(path);
    return decode_image(bytes.data(), bytes.size(), channels, path);
}

std::vector<uint8_t> encode_image(Format format, const Image& image, const std::string& parameters,
                                  int quality) {
    check_encodable(image);
    quality = std::clamp(quality, 1, 100);
    switch (format) {
        case Format::Png:
            return detail::encode_png(image, parameters);
        case Format::Jpeg:
            return detail::encode_jpeg(image, parameters, quality);
        case Format::Webp:
            return detail::encode_webp(image, parameters, quality);
        case Format::Bmp:
            return detail::encode_bmp(image);
        case Format::Unknown:
            break;
    }
    fail("cannot write %s images (PNG, JPEG, WebP and BMP can be written)", format_name(format));
}

void write_image(const std::string& path, const Image& image, const std::string& parameters,
                 int quality) {
    Format format = format_from_path(path);
    if (format == Format::Unknown)
        fail("%s: unsupported output format (use .png, .jpg, .webp or .bmp)", path.c_str());
    if (format == Format::Bmp && !parameters.empty())
        SD_LOG_INFO("%s: BMP has no text field, the generation parameters are not embedded",
                    path.c_str());
    std::vector<uint8_t> bytes;
    try {
        bytes = encode_image(format, image, parameters, quality);
    } catch (const Error& e) {
        fail("%s: %s", path.c_str(), e.what());
    }
    FileOutput out(path);
    out.write(bytes.data(), bytes.size());
    out.commit();
}

std::map<std::string, std::string> read_text(const uint8_t* data, size_t size,
                                             const std::string& name) {
    switch (detect_format(data, size)) {
        case Format::Png:
            return detail::png_text(data, size, name);
        case Format::Jpeg:
            return detail::jpeg_text(data, size, name);
        case Format::Webp:
            return detail::webp_text(data, size, name);
        case Format::Bmp:
            return {};
        case Format::Unknown:
            break;
    }
    fail("%s: not a PNG, JPEG, WebP or BMP image", name.c_str());
}

std::map<std::string, std::string> read_text(const std::string& path) {
    std::vector<uint8_t> bytes = read_file_bytes(path);
    return read_text(bytes.data(), bytes.size(), path);
}

namespace detail {

void check_dimensions(uint64_t width, uint64_t height, const std::string& name) {
    if (width == 0 || height == 0)
        fail("%s: image has no pixels (%llux%llu)", name.c_str(),
             static_cast<unsigned long long>(width), static_cast<unsigned long long>(height));
    if (width > kMaxSide || height > kMaxSide || width * height > kMaxPixels)
        fail("%s: image of %llux%llu pixels is larger than this program accepts", name.c_str(),
             static_cast<unsigned long long>(width), static_cast<unsigned long long>(height));
}

}  // namespace detail
}  // namespace sd::image
