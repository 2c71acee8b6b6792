// BMP (Windows bitmap) decoding: uncompressed 1/4/8-bit palette, 16-bit, 24-bit and 32-bit
// images with the core, info and v2-v5 headers, bottom-up or top-down. RLE is refused.
// Encoding: 24-bit bottom-up with the info header (grey and RGBA written as RGB).
#include <cstring>

#include "base/error.h"
#include "image/codecs.h"

namespace sd::image::detail {
namespace {

struct BmpHeader {
    uint32_t data_offset = 0;
    uint32_t header_size = 0;
    int64_t width = 0;
    int64_t height = 0;  // negative: rows stored top-down
    uint32_t bpp = 0;
    uint32_t compression = 0;
    uint32_t colors_used = 0;
    uint32_t masks[3] = {0, 0, 0};
    size_t palette_offset = 0;
    uint32_t palette_entry = 4;
};

uint32_t le16(const uint8_t* p) {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8);
}
uint32_t le32(const uint8_t* p) {
    return le16(p) | (le16(p + 2) << 16);
}

void need(size_t size, uint64_t end, const std::string& name) {
    if (end > size) fail("%s: BMP file is truncated", name.c_str());
}

BmpHeader read_header(const uint8_t* d, size_t size, const std::string& name) {
    need(size, 18, name);
    BmpHeader h;
    h.data_offset = le32(d + 10);
    h.header_size = le32(d + 14);
    need(size, uint64_t{14} + h.header_size, name);
    if (h.header_size == 12) {
        h.width = le16(d + 18);
        h.height = le16(d + 20);
        h.bpp = le16(d + 24);
        h.palette_entry = 3;
    } else if (h.header_size >= 40 && h.header_size <= 124) {
        h.width = static_cast<int32_t>(le32(d + 18));
        h.height = static_cast<int32_t>(le32(d + 22));
        if (le16(d + 26) != 1) fail("%s: malformed BMP header (planes != 1)", name.c_str());
        h.bpp = le16(d + 28);
        h.compression = le32(d + 30);
        h.colors_used = le32(d + 46);
    } else {
        fail("%s: unsupported BMP header size %u", name.c_str(), h.header_size);
    }
    h.palette_offset = 14 + static_cast<size_t>(h.header_size);
    if (h.compression == 3 || h.compression == 6) {  // bit fields
        const size_t mask_at = h.header_size >= 52 ? 54 : h.palette_offset;
        need(size, mask_at + 12, name);
        for (int i = 0; i < 3; ++i) h.masks[i] = le32(d + mask_at + 4 * i);
        if (h.header_size < 52) h.palette_offset += h.compression == 6 ? 16 : 12;
    } else if (h.compression != 0) {
        fail("%s: compressed BMP images (RLE, JPEG, PNG) are not supported", name.c_str());
    }
    return h;
}

// The value of one bit field scaled to 0..255.
uint8_t field(uint32_t pixel, uint32_t mask) {
    if (mask == 0) return 0;
    int shift = 0;
    while (!(mask & 1u)) {
        mask >>= 1;
        ++shift;
    }
    const uint32_t value = (pixel >> shift) & mask;
    return static_cast<uint8_t>(value * 255u / mask);
}

void default_masks(BmpHeader* h) {
    if (h->compression != 0) return;
    if (h->bpp == 16) {
        h->masks[0] = 0x7C00;
        h->masks[1] = 0x03E0;
        h->masks[2] = 0x001F;
    } else if (h->bpp == 32) {
        h->masks[0] = 0x00FF0000;
        h->masks[1] = 0x0000FF00;
        h->masks[2] = 0x000000FF;
    }
}

void decode_row(const uint8_t* d, size_t size, const BmpHeader& h, const uint8_t* src, uint8_t* dst,
                const std::string& name) {
    const uint32_t palette_size = h.bpp > 8 ? 0 : h.colors_used ? h.colors_used : (1u << h.bpp);
    for (int64_t x = 0; x < h.width; ++x, dst += 3) {
        if (h.bpp <= 8) {
            const uint64_t bit = static_cast<uint64_t>(x) * h.bpp;
            const uint32_t index = (src[bit / 8] >> (8 - h.bpp - bit % 8)) & ((1u << h.bpp) - 1);
            if (index >= palette_size)
                fail("%s: BMP pixel uses a colour outside its palette", name.c_str());
            const uint8_t* entry =
                d + h.palette_offset + static_cast<size_t>(index) * h.palette_entry;
            dst[0] = entry[2];
            dst[1] = entry[1];
            dst[2] = entry[0];
        } else if (h.bpp == 24) {
            dst[0] = src[3 * x + 2];
            dst[1] = src[3 * x + 1];
            dst[2] = src[3 * x];
        } else {
            const uint32_t pixel = h.bpp == 16 ? le16(src + 2 * x) : le32(src + 4 * x);
            for (int c = 0; c < 3; ++c) dst[c] = field(pixel, h.masks[c]);
        }
    }
}

}  // namespace

Image decode_bmp(const uint8_t* d, size_t size, const std::string& name) {
    BmpHeader h = read_header(d, size, name);
    if (h.bpp != 1 && h.bpp != 4 && h.bpp != 8 && h.bpp != 16 && h.bpp != 24 && h.bpp != 32)
        fail("%s: unsupported BMP bit depth %u", name.c_str(), h.bpp);
    if (h.width <= 0 || h.height == 0 || h.height == INT32_MIN)
        fail("%s: malformed BMP dimensions %lldx%lld", name.c_str(),
             static_cast<long long>(h.width), static_cast<long long>(h.height));
    const bool top_down = h.height < 0;
    const int64_t height = top_down ? -h.height : h.height;
    check_dimensions(static_cast<uint64_t>(h.width), static_cast<uint64_t>(height), name);
    default_masks(&h);
    if (h.bpp <= 8) {
        const uint32_t entries = h.colors_used ? h.colors_used : (1u << h.bpp);
        if (entries > 256) fail("%s: malformed BMP palette (%u colours)", name.c_str(), entries);
        need(size, h.palette_offset + uint64_t{entries} * h.palette_entry, name);
    }
    const uint64_t stride = (static_cast<uint64_t>(h.width) * h.bpp + 31) / 32 * 4;
    need(size, uint64_t{h.data_offset} + stride * static_cast<uint64_t>(height), name);
    Image image;
    image.width = static_cast<uint32_t>(h.width);
    image.height = static_cast<uint32_t>(height);
    image.channels = 3;
    image.pixels.resize(static_cast<size_t>(image.width) * image.height * 3);
    for (int64_t y = 0; y < height; ++y) {
        const int64_t stored = top_down ? y : height - 1 - y;
        const uint8_t* src = d + h.data_offset + static_cast<size_t>(stored) * stride;
        decode_row(d, size, h, src, &image.pixels[static_cast<size_t>(y) * image.width * 3], name);
    }
    return image;
}

void put_le(std::vector<uint8_t>& out, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::vector<uint8_t> encode_bmp(const Image& image) {
    const uint64_t stride = (uint64_t{image.width} * 3 + 3) / 4 * 4;
    const uint64_t data = stride * image.height;
    if (54 + data > UINT32_MAX)
        fail("a %ux%u image is too large for BMP", image.width, image.height);
    std::vector<uint8_t> out;
    out.reserve(static_cast<size_t>(54 + data));
    out.push_back('B');
    out.push_back('M');
    put_le(out, static_cast<uint32_t>(54 + data), 4);
    put_le(out, 0, 4);
    put_le(out, 54, 4);  // pixel data offset
    put_le(out, 40, 4);  // BITMAPINFOHEADER
    put_le(out, image.width, 4);
    put_le(out, image.height, 4);  // positive: rows bottom-up
    put_le(out, 1, 2);
    put_le(out, 24, 2);
    put_le(out, 0, 4);  // BI_RGB
    put_le(out, static_cast<uint32_t>(data), 4);
    put_le(out, 2835, 4);  // 72 dpi
    put_le(out, 2835, 4);
    put_le(out, 0, 4);
    put_le(out, 0, 4);
    const uint32_t c = image.channels;
    for (uint32_t row = image.height; row-- > 0;) {
        const uint8_t* p = &image.pixels[static_cast<size_t>(row) * image.width * c];
        for (uint32_t x = 0; x < image.width; ++x, p += c) {
            const uint8_t r = p[0], g = c >= 3 ? p[1] : p[0], b = c >= 3 ? p[2] : p[0];
            out.push_back(b);
            out.push_back(g);
            out.push_back(r);
        }
        out.resize(out.size() + static_cast<size_t>(stride - uint64_t{image.width} * 3), 0);
    }
    return out;
}

}  // namespace sd::image::detail
