// JPEG through libjpeg(-turbo). Its default error handler calls exit(); ours longjmps back
// into the function that started the call, which holds only plain pointers, and the
// message is thrown as an sd::Error afterwards. A file that ends early is an error, not a
// grey-padded image.
#include <cstdio>
// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "image/codecs.h"

namespace sd::image::detail {
namespace {

constexpr size_t kMaxComment = 65533;
const char kParametersLabel[] = "parameters";
const char kXmpSignature[] = "http://ns.adobe.com/xap/1.0/";

struct JpegError {
    jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

void on_jpeg_error(j_common_ptr cinfo) {
    auto* e = reinterpret_cast<JpegError*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, e->message);
    std::longjmp(e->jump, 1);
}

// Warnings are ignored, except that the data ended early.
void on_jpeg_message(j_common_ptr cinfo, int level) {
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) on_jpeg_error(cinfo);
}

void install_errors(JpegError& e) {
    jpeg_std_error(&e.mgr);
    e.mgr.error_exit = on_jpeg_error;
    e.mgr.emit_message = on_jpeg_message;
    e.message[0] = '\0';
}

struct JpegDecoder {
    jpeg_decompress_struct cinfo{};
    JpegError err{};
    bool created = false;
    ~JpegDecoder() {
        if (created) jpeg_destroy_decompress(&cinfo);
    }
};

struct JpegEncoder {
    jpeg_compress_struct cinfo{};
    JpegError err{};
    bool created = false;
    unsigned char* out = nullptr;
    unsigned long out_size = 0;
    ~JpegEncoder() {
        if (created) jpeg_destroy_compress(&cinfo);
        std::free(out);
    }
};

bool read_header(JpegDecoder& d, const uint8_t* data, size_t size) {
    if (setjmp(d.err.jump)) return false;
    d.cinfo.err = &d.err.mgr;
    jpeg_create_decompress(&d.cinfo);
    d.created = true;
    d.cinfo.mem->max_memory_to_use = size_t{1} << 30;
    jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(size));
    jpeg_read_header(&d.cinfo, TRUE);
    if (d.cinfo.jpeg_color_space == JCS_CMYK || d.cinfo.jpeg_color_space == JCS_YCCK) {
        d.cinfo.out_color_space = JCS_CMYK;
    } else if (d.cinfo.num_components == 1) {
        d.cinfo.out_color_space = JCS_GRAYSCALE;
    } else {
        d.cinfo.out_color_space = JCS_RGB;
    }
    return true;
}

bool read_pixels(JpegDecoder& d, uint8_t* pixels, size_t stride) {
    if (setjmp(d.err.jump)) return false;
    jpeg_start_decompress(&d.cinfo);
    while (d.cinfo.output_scanline < d.cinfo.output_height) {
        JSAMPROW row = pixels + d.cinfo.output_scanline * stride;
        jpeg_read_scanlines(&d.cinfo, &row, 1);
    }
    return true;
}

bool write_jpeg(JpegEncoder& e, const Image& image, int quality, const uint8_t* comment,
                size_t comment_size) {
    if (setjmp(e.err.jump)) return false;
    e.cinfo.err = &e.err.mgr;
    jpeg_create_compress(&e.cinfo);
    e.created = true;
    jpeg_mem_dest(&e.cinfo, &e.out, &e.out_size);
    e.cinfo.image_width = image.width;
    e.cinfo.image_height = image.height;
    e.cinfo.input_components = static_cast<int>(image.channels);
    e.cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&e.cinfo);
    jpeg_set_quality(&e.cinfo, quality, TRUE);
    jpeg_start_compress(&e.cinfo, TRUE);
    if (comment_size > 0)
        jpeg_write_marker(&e.cinfo, JPEG_COM, comment, static_cast<unsigned int>(comment_size));
    const size_t stride = static_cast<size_t>(image.width) * image.channels;
    while (e.cinfo.next_scanline < e.cinfo.image_height) {
        JSAMPROW row = const_cast<JSAMPROW>(image.pixels.data() + e.cinfo.next_scanline * stride);
        jpeg_write_scanlines(&e.cinfo, &row, 1);
    }
    jpeg_finish_compress(&e.cinfo);
    return true;
}

// CMYK (inverted when an Adobe marker says so) to RGB.
Image cmyk_to_rgb(const std::vector<uint8_t>& cmyk, uint32_t width, uint32_t height, bool adobe) {
    Image rgb;
    rgb.width = width;
    rgb.height = height;
    rgb.channels = 3;
    const size_t n = static_cast<size_t>(width) * height;
    rgb.pixels.resize(n * 3);
    for (size_t i = 0; i < n; ++i) {
        const uint8_t* p = &cmyk[4 * i];
        const int k = adobe ? p[3] : 255 - p[3];
        for (int c = 0; c < 3; ++c) {
            const int v = adobe ? p[c] : 255 - p[c];
            rgb.pixels[3 * i + c] = static_cast<uint8_t>((v * k + 127) / 255);
        }
    }
    return rgb;
}

Image drop_alpha(const Image& image) {
    Image rgb;
    rgb.width = image.width;
    rgb.height = image.height;
    rgb.channels = 3;
    const size_t n = static_cast<size_t>(image.width) * image.height;
    rgb.pixels.resize(n * 3);
    for (size_t i = 0; i < n; ++i) std::memcpy(&rgb.pixels[3 * i], &image.pixels[4 * i], 3);
    return rgb;
}

uint32_t read_be16(const uint8_t* p) {
    return (uint32_t{p[0]} << 8) | p[1];
}

bool starts_with(const uint8_t* p, size_t size, const char* prefix, size_t prefix_size) {
    return size >= prefix_size && std::memcmp(p, prefix, prefix_size) == 0;
}

void add_comment(const uint8_t* p, size_t size, std::map<std::string, std::string>* out) {
    if (starts_with(p, size, kParametersLabel, sizeof(kParametersLabel))) {
        (*out)["parameters"].assign(p + sizeof(kParametersLabel), p + size);
        return;
    }
    std::string text(p, p + size);
    while (!text.empty() && text.back() == '\0') text.pop_back();
    std::string& comment = (*out)["comment"];
    if (!comment.empty()) comment += "\n";
    comment += text;
}

}  // namespace

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name) {
    JpegDecoder d;
    install_errors(d.err);
    if (!read_header(d, data, size))
        fail("%s: not a valid JPEG file: %s", name.c_str(), d.err.message);
    check_dimensions(d.cinfo.image_width, d.cinfo.image_height, name);
    const uint32_t width = d.cinfo.image_width, height = d.cinfo.image_height;
    const uint32_t channels = d.cinfo.out_color_space == JCS_CMYK        ? 4
                              : d.cinfo.out_color_space == JCS_GRAYSCALE ? 1
                                                                         : 3;
    std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * channels);
    if (!read_pixels(d, pixels.data(), static_cast<size_t>(width) * channels))
        fail("%s: corrupt JPEG image data: %s", name.c_str(), d.err.message);
    if (d.cinfo.output_width != width || d.cinfo.output_height != height ||
        static_cast<uint32_t>(d.cinfo.output_components) != channels)
        fail("%s: unexpected JPEG output layout", name.c_str());
    if (channels == 4) return cmyk_to_rgb(pixels, width, height, d.cinfo.saw_Adobe_marker);
    Image image;
    image.width = width;
    image.height = height;
    image.channels = channels;
    image.pixels = std::move(pixels);
    return image;
}

std::vector<uint8_t> encode_jpeg(const Image& image, const std::string& parameters, int quality) {
    if (image.channels == 4) return encode_jpeg(drop_alpha(image), parameters, quality);
    std::vector<uint8_t> comment;
    if (!parameters.empty()) {
        comment.assign(kParametersLabel, kParametersLabel + sizeof(kParametersLabel));
        comment.insert(comment.end(), parameters.begin(), parameters.end());
        if (comment.size() > kMaxComment) {
            SD_LOG_WARN("JPEG comments hold at most %zu bytes; the parameters text is cut short",
                        kMaxComment);
            comment.resize(kMaxComment);
        }
    }
    JpegEncoder e;
    install_errors(e.err);
    if (!write_jpeg(e, image, quality, comment.data(), comment.size()))
        fail("JPEG encoding failed: %s", e.err.message);
    return std::vector<uint8_t>(e.out, e.out + e.out_size);
}

std::map<std::string, std::string> jpeg_text(const uint8_t* data, size_t size,
                                             const std::string& name) {
    if (detect_format(data, size) != Format::Jpeg) fail("%s: not a JPEG file", name.c_str());
    std::map<std::string, std::string> out;
    size_t pos = 2;
    for (;;) {
        if (pos >= size)
            fail("%s: JPEG file ends before its image data (truncated?)", name.c_str());
        if (data[pos] != 0xFF) fail("%s: malformed JPEG: no marker at byte %zu", name.c_str(), pos);
        while (pos < size && data[pos] == 0xFF) ++pos;
        if (pos >= size) fail("%s: JPEG file ends inside a marker (truncated?)", name.c_str());
        const uint8_t marker = data[pos++];
        if (marker == 0xD9 || marker == 0xDA) return out;  // EOI, start of scan
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
        if (size - pos < 2) fail("%s: JPEG segment header is truncated", name.c_str());
        const uint32_t length = read_be16(data + pos);
        if (length < 2 || length > size - pos)
            fail("%s: JPEG segment 0x%02X runs past the end of the file (truncated?)", name.c_str(),
                 marker);
        const uint8_t* payload = data + pos + 2;
        const size_t payload_size = length - 2;
        if (marker == 0xFE) {
            add_comment(payload, payload_size, &out);
        } else if (marker == 0xE1 &&
                   starts_with(payload, payload_size, kXmpSignature, sizeof(kXmpSignature))) {
            std::string xmp(payload + sizeof(kXmpSignature), payload + payload_size);
            std::string parameters = parameters_from_xmp(xmp);
            if (!parameters.empty() && !out.count("parameters")) out["parameters"] = parameters;
        }
        pos += length;
    }
}

}  // namespace sd::image::detail
