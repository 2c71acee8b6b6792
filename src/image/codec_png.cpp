// PNG through libpng. libpng reports errors by longjmp; every function that calls into it
// sets its jump buffer first and holds only plain pointers, so nothing with a destructor is
// skipped by the jump. Errors are copied into the reader/writer and thrown afterwards.
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "image/codecs.h"

namespace sd::image::detail {
namespace {

constexpr size_t kMaxTextBytes = size_t{64} << 20;

struct PngReader {
    png_structp png = nullptr;
    png_infop info = nullptr;
    const uint8_t* data = nullptr;
    size_t size = 0;
    size_t pos = 0;
    char error[256] = "";

    ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
};

struct PngWriter {
    png_structp png = nullptr;
    png_infop info = nullptr;
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t capacity = 0;
    char error[256] = "";

    ~PngWriter() {
        png_destroy_write_struct(&png, &info);
        std::free(buffer);
    }
};

void on_png_error(png_structp png, png_const_charp message) {
    char* error = static_cast<char*>(png_get_error_ptr(png));
    std::snprintf(error, 256, "%s", message);
    png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

void read_from_memory(png_structp png, png_bytep out, size_t n) {
    auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
    if (n > r->size - r->pos) png_error(png, "the file is truncated");
    std::memcpy(out, r->data + r->pos, n);
    r->pos += n;
}

void write_to_memory(png_structp png, png_bytep data, size_t n) {
    auto* w = static_cast<PngWriter*>(png_get_io_ptr(png));
    if (w->size + n > w->capacity) {
        size_t capacity = std::max(w->capacity * 2, w->size + n + 4096);
        auto* grown = static_cast<uint8_t*>(std::realloc(w->buffer, capacity));
        if (!grown) png_error(png, "out of memory");
        w->buffer = grown;
        w->capacity = capacity;
    }
    std::memcpy(w->buffer + w->size, data, n);
    w->size += n;
}

void flush_memory(png_structp) {}

// Reads the header and sets the transforms to 8-bit grey or RGB without alpha.
bool read_header(PngReader& r, png_uint_32* width, png_uint_32* height, int* channels) {
    if (setjmp(png_jmpbuf(r.png))) return false;
    png_set_user_limits(r.png, kMaxSide, kMaxSide);
    png_set_chunk_malloc_max(r.png, kMaxTextBytes);
    png_set_read_fn(r.png, &r, read_from_memory);
    png_read_info(r.png, r.info);
    png_set_strip_16(r.png);
    png_set_palette_to_rgb(r.png);
    png_set_expand_gray_1_2_4_to_8(r.png);
    png_set_strip_alpha(r.png);
    png_set_interlace_handling(r.png);
    png_read_update_info(r.png, r.info);
    *width = png_get_image_width(r.png, r.info);
    *height = png_get_image_height(r.png, r.info);
    *channels = png_get_channels(r.png, r.info);
    return true;
}

bool read_rows(PngReader& r, png_bytepp rows) {
    if (setjmp(png_jmpbuf(r.png))) return false;
    png_read_image(r.png, rows);
    return true;
}

bool write_png(PngWriter& w, png_uint_32 width, png_uint_32 height, int color_type, png_bytepp rows,
               png_textp text, int text_count) {
    if (setjmp(png_jmpbuf(w.png))) return false;
    png_set_write_fn(w.png, &w, write_to_memory, flush_memory);
    png_set_IHDR(w.png, w.info, width, height, 8, color_type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (text_count > 0) png_set_text(w.png, w.info, text, text_count);
    png_write_info(w.png, w.info);
    png_write_image(w.png, rows);
    png_write_end(w.png, nullptr);
    return true;
}

uint32_t read_be32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// zlib-inflates `size` bytes, refusing output beyond kMaxTextBytes.
bool inflate_text(const uint8_t* data, size_t size, std::string* out) {
    z_stream zs{};
    if (inflateInit(&zs) != Z_OK) return false;
    zs.next_in = const_cast<Bytef*>(data);
    zs.avail_in = static_cast<uInt>(size);
    char buffer[16384];
    int status = Z_OK;
    while (status == Z_OK) {
        zs.next_out = reinterpret_cast<Bytef*>(buffer);
        zs.avail_out = sizeof(buffer);
        status = inflate(&zs, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END) break;
        out->append(buffer, sizeof(buffer) - zs.avail_out);
        if (out->size() > kMaxTextBytes) status = Z_MEM_ERROR;
        if (status == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) status = Z_DATA_ERROR;
    }
    inflateEnd(&zs);
    return status == Z_STREAM_END;
}

const uint8_t* find_nul(const uint8_t* begin, const uint8_t* end) {
    return static_cast<const uint8_t*>(std::memchr(begin, 0, static_cast<size_t>(end - begin)));
}

// One tEXt / zTXt / iTXt payload into (keyword, text).
void parse_text_chunk(const std::string& type, const uint8_t* p, const uint8_t* end,
                      const std::string& name, std::map<std::string, std::string>* out) {
    const uint8_t* sep = find_nul(p, end);
    if (!sep)
        fail("%s: malformed PNG %s chunk (no keyword terminator)", name.c_str(), type.c_str());
    std::string keyword(p, sep);
    const uint8_t* rest = sep + 1;
    std::string text;
    bool compressed = type == "zTXt";
    if (type == "iTXt") {
        if (end - rest < 2) fail("%s: malformed PNG iTXt chunk", name.c_str());
        compressed = rest[0] != 0;
        rest += 2;
        for (int skip = 0; skip < 2; ++skip) {  // language tag, translated keyword
            const uint8_t* nul = find_nul(rest, end);
            if (!nul) fail("%s: malformed PNG iTXt chunk", name.c_str());
            rest = nul + 1;
        }
    } else if (type == "zTXt") {
        if (rest >= end) fail("%s: malformed PNG zTXt chunk", name.c_str());
        ++rest;  // compression method
    }
    if (compressed) {
        if (!inflate_text(rest, static_cast<size_t>(end - rest), &text))
            fail("%s: PNG %s chunk '%s' does not decompress", name.c_str(), type.c_str(),
                 keyword.c_str());
    } else {
        text.assign(rest, end);
    }
    (*out)[keyword] = std::move(text);
}

// Calls fn(type, payload, length) for each chunk up to IEND; a chunk that claims more
// bytes than the file holds, or a missing IEND, is an error.
template <typename Fn>
void for_each_chunk(const uint8_t* data, size_t size, const std::string& name, Fn&& fn) {
    if (detect_format(data, size) != Format::Png) fail("%s: not a PNG file", name.c_str());
    size_t pos = 8;
    while (size - pos >= 12) {
        const uint32_t length = read_be32(data + pos);
        const std::string type(reinterpret_cast<const char*>(data + pos + 4), 4);
        if (length > size - pos - 12)
            fail("%s: PNG chunk '%s' runs past the end of the file (truncated?)", name.c_str(),
                 type.c_str());
        fn(type, data + pos + 8, length);
        if (type == "IEND") return;
        pos += 12 + static_cast<size_t>(length);
    }
    fail("%s: PNG file ends without an IEND chunk (truncated?)", name.c_str());
}

}  // namespace

Image decode_png(const uint8_t* data, size_t size, const std::string& name) {
    // The chunk lengths first: libpng would zero a buffer as large as a chunk claims
    // (1.5 GiB for 150 bytes, found by fuzz_image) before it notices the file is short.
    for_each_chunk(data, size, name, [](const std::string&, const uint8_t*, uint32_t) {});
    PngReader r;
    r.data = data;
    r.size = size;
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r.error, on_png_error, on_png_warning);
    if (r.png) r.info = png_create_info_struct(r.png);
    if (!r.png || !r.info) fail("%s: cannot start the PNG decoder", name.c_str());
    png_uint_32 width = 0, height = 0;
    int channels = 0;
    if (!read_header(r, &width, &height, &channels))
        fail("%s: not a valid PNG file: %s", name.c_str(), r.error);
    check_dimensions(width, height, name);
    if (channels != 1 && channels != 3)
        fail("%s: unexpected PNG layout (%d channels after conversion)", name.c_str(), channels);
    Image image;
    image.width = width;
    image.height = height;
    image.channels = static_cast<uint32_t>(channels);
    image.pixels.resize(static_cast<size_t>(width) * height * channels);
    std::vector<png_bytep> rows(height);
    for (png_uint_32 y = 0; y < height; ++y)
        rows[y] = image.pixels.data() + static_cast<size_t>(y) * width * channels;
    if (!read_rows(r, rows.data())) fail("%s: corrupt PNG image data: %s", name.c_str(), r.error);
    return image;
}

std::vector<uint8_t> encode_png(const Image& image, const std::string& parameters) {
    PngWriter w;
    w.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, w.error, on_png_error, on_png_warning);
    if (w.png) w.info = png_create_info_struct(w.png);
    if (!w.png || !w.info) fail("cannot start the PNG encoder");
    static const int color_types[5] = {0, PNG_COLOR_TYPE_GRAY, 0, PNG_COLOR_TYPE_RGB,
                                       PNG_COLOR_TYPE_RGB_ALPHA};
    std::vector<png_bytep> rows(image.height);
    const size_t stride = static_cast<size_t>(image.width) * image.channels;
    for (uint32_t y = 0; y < image.height; ++y)
        rows[y] = const_cast<png_bytep>(image.pixels.data() + y * stride);
    std::string keyword = "parameters";
    std::string text = parameters;
    ::png_text chunk{};
    chunk.compression = PNG_TEXT_COMPRESSION_NONE;
    chunk.key = keyword.data();
    chunk.text = text.data();
    chunk.text_length = text.size();
    if (!write_png(w, image.width, image.height, color_types[image.channels], rows.data(), &chunk,
                   parameters.empty() ? 0 : 1))
        fail("PNG encoding failed: %s", w.error);
    return std::vector<uint8_t>(w.buffer, w.buffer + w.size);
}

std::map<std::string, std::string> png_text(const uint8_t* data, size_t size,
                                            const std::string& name) {
    std::map<std::string, std::string> out;
    for_each_chunk(data, size, name,
                   [&](const std::string& type, const uint8_t* payload, uint32_t length) {
                       if (type == "tEXt" || type == "zTXt" || type == "iTXt")
                           parse_text_chunk(type, payload, payload + length, name, &out);
                   });
    return out;
}

}  // namespace sd::image::detail
