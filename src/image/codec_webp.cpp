// WebP through libwebp (decode, encode) and libwebpmux (the XMP chunk that carries the
// parameters). Text is read back by walking the RIFF chunks here, with bounds checks.
#include <webp/decode.h>
#include <webp/encode.h>
#include <webp/mux.h>

#include <cstring>
#include <memory>

#include "base/error.h"
#include "image/codecs.h"

namespace sd::image::detail {
namespace {

uint32_t read_le32(const uint8_t* p) {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

std::vector<uint8_t> encode_pixels(const Image& image, int quality) {
    std::vector<uint8_t> rgb;
    const uint8_t* pixels = image.pixels.data();
    if (image.channels == 1) {
        rgb.resize(image.pixels.size() * 3);
        for (size_t i = 0; i < image.pixels.size(); ++i)
            rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = image.pixels[i];
        pixels = rgb.data();
    }
    const int w = static_cast<int>(image.width), h = static_cast<int>(image.height);
    uint8_t* encoded = nullptr;
    const size_t size =
        image.channels == 4
            ? WebPEncodeRGBA(pixels, w, h, w * 4, static_cast<float>(quality), &encoded)
            : WebPEncodeRGB(pixels, w, h, w * 3, static_cast<float>(quality), &encoded);
    if (!encoded || size == 0) {
        WebPFree(encoded);
        fail("WebP encoding of a %dx%d image failed", w, h);
    }
    std::vector<uint8_t> out(encoded, encoded + size);
    WebPFree(encoded);
    return out;
}

std::vector<uint8_t> add_xmp(const std::vector<uint8_t>& webp, const std::string& xmp) {
    std::unique_ptr<WebPMux, void (*)(WebPMux*)> mux(WebPMuxNew(), WebPMuxDelete);
    if (!mux) fail("cannot start the WebP muxer");
    WebPData image{webp.data(), webp.size()};
    WebPData chunk{reinterpret_cast<const uint8_t*>(xmp.data()), xmp.size()};
    WebPData assembled;
    WebPDataInit(&assembled);
    if (WebPMuxSetImage(mux.get(), &image, 1) != WEBP_MUX_OK ||
        WebPMuxSetChunk(mux.get(), "XMP ", &chunk, 1) != WEBP_MUX_OK ||
        WebPMuxAssemble(mux.get(), &assembled) != WEBP_MUX_OK) {
        WebPDataClear(&assembled);
        fail("adding the parameters to the WebP file failed");
    }
    std::vector<uint8_t> out(assembled.bytes, assembled.bytes + assembled.size);
    WebPDataClear(&assembled);
    return out;
}

}  // namespace

Image decode_webp(const uint8_t* data, size_t size, const std::string& name) {
    WebPBitstreamFeatures features;
    VP8StatusCode status = WebPGetFeatures(data, size, &features);
    if (status == VP8_STATUS_NOT_ENOUGH_DATA) fail("%s: WebP file is truncated", name.c_str());
    if (status != VP8_STATUS_OK)
        fail("%s: not a valid WebP file (status %d)", name.c_str(), status);
    if (features.has_animation) fail("%s: animated WebP images are not supported", name.c_str());
    check_dimensions(static_cast<uint64_t>(features.width), static_cast<uint64_t>(features.height),
                     name);
    Image image;
    image.width = static_cast<uint32_t>(features.width);
    image.height = static_cast<uint32_t>(features.height);
    image.channels = 3;
    image.pixels.resize(static_cast<size_t>(image.width) * image.height * 3);
    if (!WebPDecodeRGBInto(data, size, image.pixels.data(), image.pixels.size(),
                           static_cast<int>(image.width * 3)))
        fail("%s: corrupt or truncated WebP image data", name.c_str());
    return image;
}

std::vector<uint8_t> encode_webp(const Image& image, const std::string& parameters, int quality) {
    std::vector<uint8_t> webp = encode_pixels(image, quality);
    if (parameters.empty()) return webp;
    return add_xmp(webp, parameters_xmp(parameters));
}

std::map<std::string, std::string> webp_text(const uint8_t* data, size_t size,
                                             const std::string& name) {
    if (detect_format(data, size) != Format::Webp) fail("%s: not a WebP file", name.c_str());
    const uint64_t riff_end = uint64_t{read_le32(data + 4)} + 8;
    if (riff_end > size)
        fail("%s: WebP file is truncated (RIFF size %llu, file %zu bytes)", name.c_str(),
             static_cast<unsigned long long>(riff_end), size);
    std::map<std::string, std::string> out;
    size_t pos = 12;
    while (pos + 8 <= riff_end) {
        const std::string fourcc(reinterpret_cast<const char*>(data + pos), 4);
        const uint64_t length = read_le32(data + pos + 4);
        if (length > riff_end - pos - 8)
            fail("%s: WebP chunk '%s' runs past the end of the file (truncated?)", name.c_str(),
                 fourcc.c_str());
        if (fourcc == "XMP ") {
            std::string xmp(data + pos + 8, data + pos + 8 + length);
            std::string parameters = parameters_from_xmp(xmp);
            if (!parameters.empty()) out["parameters"] = parameters;
        }
        pos += 8 + static_cast<size_t>(length + (length & 1));
    }
    return out;
}

}  // namespace sd::image::detail
