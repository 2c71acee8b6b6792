#include "image/image_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "base/error.h"
#include "image/image_resize.h"
#include "io/io_test_util.h"

namespace sd::image {
namespace {

// A smooth colour gradient (lossy codecs reproduce it closely).
Image gradient(uint32_t w, uint32_t h, uint32_t channels) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = channels;
    img.pixels.resize(static_cast<size_t>(w) * h * channels);
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x)
            for (uint32_t c = 0; c < channels; ++c)
                img.pixels[(y * w + x) * channels + c] = static_cast<uint8_t>(
                    x * 160 / std::max(1u, w - 1) + y * 60 / std::max(1u, h - 1) + c * 10);
    return img;
}

Image noise(uint32_t w, uint32_t h, uint32_t channels, uint32_t seed) {
    Image img = gradient(w, h, channels);
    std::mt19937 gen(seed);
    for (uint8_t& p : img.pixels) p = static_cast<uint8_t>(gen());
    return img;
}

double mean_abs_diff(const Image& a, const Image& b) {
    double sum = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i)
        sum += std::fabs(double(a.pixels[i]) - b.pixels[i]);
    return sum / static_cast<double>(a.pixels.size());
}

std::string as_string(const std::vector<uint8_t>& bytes) {
    return std::string(bytes.begin(), bytes.end());
}

Image decode(const std::vector<uint8_t>& bytes, int channels) {
    return decode_image(bytes.data(), bytes.size(), channels, "test image");
}

const std::string kParameters =
    "a <lovely> cat & \"dog\" 'x' caf\xC3\xA9 \xE7\x8C\xAB\nNegative prompt: ugly\nSteps: 20, "
    "Seed: 42";

TEST(ImageFormat, FromPathAndContent) {
    EXPECT_EQ(format_from_path("a/b.PNG"), Format::Png);
    EXPECT_EQ(format_from_path("x.jpeg"), Format::Jpeg);
    EXPECT_EQ(format_from_path("x.JPG"), Format::Jpeg);
    EXPECT_EQ(format_from_path("x.jpe"), Format::Jpeg);
    EXPECT_EQ(format_from_path("x.webp"), Format::Webp);
    EXPECT_EQ(format_from_path("x.bmp"), Format::Bmp);
    EXPECT_EQ(format_from_path("x.gif"), Format::Unknown);
    EXPECT_EQ(format_from_path("dir.png/file"), Format::Unknown);
    Image img = gradient(8, 8, 3);
    EXPECT_EQ(detect_format(encode_image(Format::Png, img, "").data(), 64), Format::Png);
    EXPECT_EQ(detect_format(encode_image(Format::Jpeg, img, "").data(), 64), Format::Jpeg);
    EXPECT_EQ(detect_format(encode_image(Format::Webp, img, "").data(), 64), Format::Webp);
}

TEST(ImagePng, RoundTripIsExact) {
    for (uint32_t channels : {1u, 3u}) {
        Image img = noise(37, 23, channels, channels);
        Image back = decode(encode_image(Format::Png, img, ""), static_cast<int>(channels));
        EXPECT_EQ(back.width, 37u);
        EXPECT_EQ(back.height, 23u);
        EXPECT_EQ(back.channels, channels);
        EXPECT_EQ(back.pixels, img.pixels);
    }
}

TEST(ImagePng, AlphaIsDroppedAndChannelsConvert) {
    Image rgba = noise(5, 4, 4, 7);
    Image rgb = decode(encode_image(Format::Png, rgba, ""), 3);
    for (size_t i = 0; i < 20; ++i)
        ASSERT_EQ(0, std::memcmp(&rgb.pixels[3 * i], &rgba.pixels[4 * i], 3));
    Image grey = decode(encode_image(Format::Png, rgba, ""), 1);
    for (size_t i = 0; i < 20; ++i) {
        const uint8_t* p = &rgba.pixels[4 * i];
        EXPECT_EQ(grey.pixels[i], (77 * p[0] + 150 * p[1] + 29 * p[2]) >> 8);
    }
    Image g = noise(6, 3, 1, 9);
    Image replicated = decode(encode_image(Format::Png, g, ""), 3);
    for (size_t i = 0; i < 18; ++i) {
        EXPECT_EQ(replicated.pixels[3 * i], g.pixels[i]);
        EXPECT_EQ(replicated.pixels[3 * i + 2], g.pixels[i]);
    }
}

TEST(ImagePng, ParametersTextChunk) {
    std::vector<uint8_t> png = encode_image(Format::Png, gradient(16, 16, 3), kParameters);
    auto text = read_text(png.data(), png.size(), "mem.png");
    EXPECT_EQ(text["parameters"], kParameters);
    // The chunk comes before the image data, where readers look for it.
    std::string bytes = as_string(png);
    EXPECT_LT(bytes.find("tEXtparameters"), bytes.find("IDAT"));
    std::vector<uint8_t> plain = encode_image(Format::Png, gradient(16, 16, 3), "");
    EXPECT_TRUE(read_text(plain.data(), plain.size(), "plain.png").empty());
}

TEST(ImagePng, ReadsReferencePngText) {
    const std::string path = std::string(SD_FIXTURES_DIR) + "/reference/sd15/txt2img_euler.png";
    auto text = read_text(path);
    ASSERT_TRUE(text.count("parameters"));
    EXPECT_EQ(text["parameters"].rfind("a lovely cat\nSteps: 4, CFG scale: 7.000000", 0), 0u);
    Image img = read_image(path, 3);
    EXPECT_EQ(img.width, 256u);
    EXPECT_EQ(img.height, 256u);
}

TEST(ImageJpeg, RoundTripIsClose) {
    Image img = gradient(64, 48, 3);
    Image back = decode(encode_image(Format::Jpeg, img, "", 90), 3);
    ASSERT_EQ(back.width, 64u);
    ASSERT_EQ(back.height, 48u);
    EXPECT_LT(mean_abs_diff(img, back), 3.0);
    Image grey = gradient(40, 40, 1);
    Image grey_back = decode(encode_image(Format::Jpeg, grey, "", 95), 1);
    EXPECT_LT(mean_abs_diff(grey, grey_back), 2.0);
}

TEST(ImageJpeg, ParametersComment) {
    std::vector<uint8_t> jpg = encode_image(Format::Jpeg, gradient(16, 16, 3), kParameters);
    auto text = read_text(jpg.data(), jpg.size(), "mem.jpg");
    EXPECT_EQ(text["parameters"], kParameters);
    // A text too long for one comment segment is cut short, not an error.
    std::string long_text(70000, 'x');
    std::vector<uint8_t> cut = encode_image(Format::Jpeg, gradient(8, 8, 3), long_text);
    auto cut_text = read_text(cut.data(), cut.size(), "cut.jpg");
    EXPECT_EQ(cut_text["parameters"], std::string(65533 - 11, 'x'));
    EXPECT_EQ(decode(cut, 3).width, 8u);
}

TEST(ImageWebp, RoundTripAndXmpParameters) {
    Image img = gradient(48, 32, 3);
    std::vector<uint8_t> webp = encode_image(Format::Webp, img, kParameters, 90);
    Image back = decode(webp, 3);
    ASSERT_EQ(back.width, 48u);
    ASSERT_EQ(back.height, 32u);
    EXPECT_LT(mean_abs_diff(img, back), 4.0);
    auto text = read_text(webp.data(), webp.size(), "mem.webp");
    EXPECT_EQ(text["parameters"], kParameters);
    Image grey_back = decode(encode_image(Format::Webp, gradient(16, 16, 1), ""), 1);
    EXPECT_EQ(grey_back.channels, 1u);
    Image from_rgba = decode(encode_image(Format::Webp, gradient(16, 16, 4), ""), 3);
    EXPECT_EQ(from_rgba.width, 16u);
}

// A minimal BMP writer for the decoder tests.
std::vector<uint8_t> bmp(int32_t w, int32_t h, uint16_t bpp, const std::vector<uint8_t>& palette,
                         const std::vector<uint8_t>& rows, uint32_t compression = 0,
                         const std::vector<uint32_t>& masks = {}, uint32_t colors_used = 0) {
    std::vector<uint8_t> out(54);
    auto put16 = [&](size_t at, uint32_t v) {
        out[at] = v & 0xFF;
        out[at + 1] = (v >> 8) & 0xFF;
    };
    auto put32 = [&](size_t at, uint32_t v) {
        put16(at, v & 0xFFFF);
        put16(at + 2, v >> 16);
    };
    out[0] = 'B';
    out[1] = 'M';
    put32(14, 40);
    put32(18, static_cast<uint32_t>(w));
    put32(22, static_cast<uint32_t>(h));
    put16(26, 1);
    put16(28, bpp);
    put32(30, compression);
    put32(46, colors_used);
    for (uint32_t m : masks)
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(m >> (8 * i)));
    out.insert(out.end(), palette.begin(), palette.end());
    put32(10, static_cast<uint32_t>(out.size()));
    out.insert(out.end(), rows.begin(), rows.end());
    put32(2, static_cast<uint32_t>(out.size()));
    return out;
}

TEST(ImageBmp, TwentyFourBitBottomUp) {
    // 2x2: bottom row stored first, BGR, rows padded to 4 bytes.
    std::vector<uint8_t> rows = {3, 2, 1, 6, 5, 4, 0, 0, 30, 20, 10, 60, 50, 40, 0, 0};
    Image img = decode(bmp(2, 2, 24, {}, rows), 3);
    EXPECT_EQ(img.pixels, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60, 1, 2, 3, 4, 5, 6}));
    Image top_down = decode(bmp(2, -2, 24, {}, rows), 3);
    EXPECT_EQ(top_down.pixels, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}));
}

TEST(ImageBmp, PaletteAndBitFields) {
    std::vector<uint8_t> palette = {0, 0, 255, 0, 255, 0, 0, 0};  // red, blue
    Image one_bit = decode(bmp(3, 1, 1, palette, {0b10100000, 0, 0, 0}), 3);
    EXPECT_EQ(one_bit.pixels, (std::vector<uint8_t>{0, 0, 255, 255, 0, 0, 0, 0, 255}));
    Image eight = decode(bmp(2, 1, 8, palette, {1, 0, 0, 0}, 0, {}, 2), 3);
    EXPECT_EQ(eight.pixels, (std::vector<uint8_t>{0, 0, 255, 255, 0, 0}));
    // 32-bit with explicit masks (RGBA order in memory: R in the low byte).
    std::vector<uint8_t> px = {11, 22, 33, 255};
    Image fields = decode(bmp(1, 1, 32, {}, px, 3, {0x000000FF, 0x0000FF00, 0x00FF0000}), 3);
    EXPECT_EQ(fields.pixels, (std::vector<uint8_t>{11, 22, 33}));
    // 16-bit 5:5:5 default.
    Image b16 = decode(bmp(1, 1, 16, {}, {0x00, 0x7C, 0, 0}), 3);
    EXPECT_EQ(b16.pixels, (std::vector<uint8_t>{255, 0, 0}));
}

TEST(ImageBmp, HostileHeaders) {
    std::vector<uint8_t> rows(16, 0);
    EXPECT_ERROR_CONTAINS(decode(bmp(2, 2, 24, {}, rows, 1), 3), "not supported");
    EXPECT_ERROR_CONTAINS(decode(bmp(2, 2, 7, {}, rows), 3), "bit depth");
    EXPECT_ERROR_CONTAINS(decode(bmp(0, 2, 24, {}, rows), 3), "dimensions");
    EXPECT_ERROR_CONTAINS(decode(bmp(1000000, 1, 24, {}, rows), 3), "larger than");
    EXPECT_ERROR_CONTAINS(decode(bmp(64, 64, 24, {}, rows), 3), "truncated");
    EXPECT_ERROR_CONTAINS(decode(bmp(2, 1, 8, {0, 0, 255, 0}, {1, 0, 0, 0}, 0, {}, 1), 3),
                          "palette");
    EXPECT_ERROR_CONTAINS(decode(bmp(2, 1, 8, {0, 0, 255, 0}, {1, 0, 0, 0}, 0, {}, 300), 3),
                          "palette");
    std::vector<uint8_t> tiny = {'B', 'M', 0, 0};
    EXPECT_ERROR_CONTAINS(decode(tiny, 3), "truncated");
}

TEST(ImageFiles, WriteAndReadEveryFormat) {
    Image img = gradient(32, 24, 3);
    for (const char* ext : {".png", ".jpg", ".webp"}) {
        std::string path = test::temp_path(std::string("roundtrip") + ext);
        write_image(path, img, kParameters);
        EXPECT_FALSE(std::ifstream(path + ".part").good()) << ext;
        Image back = read_image(path, 3);
        EXPECT_EQ(back.width, 32u) << ext;
        EXPECT_LT(mean_abs_diff(img, back), 4.0) << ext;
        EXPECT_EQ(read_text(path)["parameters"], kParameters) << ext;
        std::remove(path.c_str());
    }
}

// -o x.bmp writes a 24-bit BMP (odd widths pad their rows), exact; grey and RGBA as RGB.
TEST(ImageFiles, WritesBmp) {
    for (uint32_t channels : {1u, 3u, 4u}) {
        const Image img = gradient(13, 7, channels);
        const std::string path = test::temp_path("written.bmp");
        write_image(path, img, kParameters);  // BMP has no text field: not embedded
        const Image back = read_image(path, 3);
        ASSERT_EQ(back.width, 13u);
        ASSERT_EQ(back.height, 7u);
        const Image expected = decode_image(encode_image(Format::Png, img, "").data(),
                                            encode_image(Format::Png, img, "").size(), 3, "png");
        EXPECT_EQ(back.pixels, expected.pixels) << channels;
        std::remove(path.c_str());
    }
}

TEST(ImageFiles, ErrorsNameTheFile) {
    EXPECT_ERROR_CONTAINS(read_image("/nonexistent/cat.png", 3), "/nonexistent/cat.png");
    EXPECT_ERROR_CONTAINS(read_image(testing::TempDir(), 3), "folder");
    std::string empty = test::write_temp("empty.png", "");
    EXPECT_ERROR_CONTAINS(read_image(empty, 3), empty);
    std::string text = test::write_temp("text.png", "hello, this is not an image at all");
    EXPECT_ERROR_CONTAINS(read_image(text, 3), "not a PNG, JPEG, WebP or BMP");
    EXPECT_ERROR_CONTAINS(write_image(test::temp_path("x.gif"), gradient(4, 4, 3)), "x.gif");
    EXPECT_ERROR_CONTAINS(write_image("/nonexistent/dir/x.png", gradient(4, 4, 3)),
                          "/nonexistent/dir/x.png");
    Image bad = gradient(4, 4, 3);
    bad.pixels.pop_back();
    EXPECT_ERROR_CONTAINS(write_image(test::temp_path("bad.png"), bad), "bad.png");
    EXPECT_ERROR_CONTAINS(decode_image(nullptr, 0, 2, "x"), "channels");
}

// Every truncation and many corruptions of a valid file: an sd::Error or a decoded image of
// the right size, never a crash (the sanitizer build checks memory).
void fuzz_format(Format format) {
    const Image img = noise(24, 16, 3, 5);
    const std::vector<uint8_t> good = encode_image(format, img, kParameters);
    const std::string name = format_name(format);
    for (size_t n = 0; n < good.size(); ++n) {
        std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
        try {
            Image out = decode_image(cut.data(), cut.size(), 3, "cut");
            EXPECT_EQ(out.width, 24u) << name << " prefix " << n;
            EXPECT_GT(n, good.size() / 2) << name << " decoded from a prefix of " << n;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("cut"), std::string::npos) << e.what();
        }
        try {
            read_text(cut.data(), cut.size(), "cut");
        } catch (const Error&) {
        }
    }
    std::mt19937 gen(42);
    for (int round = 0; round < 300; ++round) {
        std::vector<uint8_t> bad = good;
        for (int k = 0; k < 1 + round % 4; ++k)
            bad[gen() % bad.size()] = static_cast<uint8_t>(gen());
        try {
            Image out = decode_image(bad.data(), bad.size(), 3, "corrupt");
            EXPECT_EQ(out.pixels.size(), size_t{out.width} * out.height * 3);
        } catch (const Error&) {
        }
        try {
            read_text(bad.data(), bad.size(), "corrupt");
        } catch (const Error&) {
        }
    }
}

TEST(ImageHostile, TruncatedAndCorruptPng) {
    fuzz_format(Format::Png);
}
TEST(ImageHostile, TruncatedAndCorruptJpeg) {
    fuzz_format(Format::Jpeg);
}
TEST(ImageHostile, TruncatedAndCorruptWebp) {
    fuzz_format(Format::Webp);
}

TEST(ImageHostile, TruncatedAndCorruptBmp) {
    std::vector<uint8_t> rows(16 * 12 * 3, 77);
    const std::vector<uint8_t> good = bmp(16, 12, 24, {}, rows);
    for (size_t n = 0; n + 1 < good.size(); ++n) {
        std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
        EXPECT_THROW(decode_image(cut.data(), cut.size(), 3, "cut.bmp"), Error) << n;
    }
    std::mt19937 gen(7);
    for (int round = 0; round < 300; ++round) {
        std::vector<uint8_t> bad = good;
        bad[gen() % 54] = static_cast<uint8_t>(gen());
        try {
            decode_image(bad.data(), bad.size(), 3, "corrupt.bmp");
        } catch (const Error&) {
        }
    }
}

// A chunk after IHDR claiming 1.5 GiB in a file of a few hundred bytes: refused from the
// chunk walk at once (libpng zeroed a buffer of the claimed size first: fuzz_image timeout).
TEST(ImageHostile, ChunkLongerThanTheFile) {
    std::vector<uint8_t> png = encode_image(Format::Png, gradient(5, 3, 3), kParameters);
    const size_t second_chunk = 8 + 12 + 13;  // signature, IHDR (header, 13 bytes, CRC)
    png[second_chunk] = 0x60;
    EXPECT_ERROR_CONTAINS(decode_image(png.data(), png.size(), 3, "lie.png"),
                          "runs past the end of the file");
    EXPECT_ERROR_CONTAINS(read_text(png.data(), png.size(), "lie.png"), "runs past the end");
}

TEST(ImageHostile, HugeDimensionsAreRefused) {
    // A PNG whose header claims 100000 x 100000 pixels.
    std::vector<uint8_t> png = encode_image(Format::Png, gradient(2, 2, 3), "");
    png[16] = 0x00;
    png[17] = 0x01;
    png[18] = 0x86;
    png[19] = 0xA0;
    png[20] = 0x00;
    png[21] = 0x01;
    png[22] = 0x86;
    png[23] = 0xA0;
    EXPECT_ERROR_CONTAINS(decode_image(png.data(), png.size(), 3, "huge.png"), "huge.png");
    // A JPEG whose frame header claims 60000 x 60000.
    std::vector<uint8_t> jpg = encode_image(Format::Jpeg, gradient(8, 8, 3), "");
    for (size_t i = 2; i + 9 < jpg.size(); ++i) {
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
            jpg[i + 5] = 0xEA;
            jpg[i + 6] = 0x60;
            jpg[i + 7] = 0xEA;
            jpg[i + 8] = 0x60;
            break;
        }
    }
    EXPECT_ERROR_CONTAINS(decode_image(jpg.data(), jpg.size(), 3, "huge.jpg"), "larger than");
}

TEST(ImageResize, CropAndBox) {
    Image img = gradient(40, 20, 3);
    Image cropped = crop_to_aspect(img, 10, 10);
    EXPECT_EQ(cropped.width, 20u);
    EXPECT_EQ(cropped.height, 20u);
    EXPECT_EQ(cropped.pixels[0], img.pixels[10 * 3]);
    Image flat;
    flat.width = 8;
    flat.height = 8;
    flat.channels = 1;
    flat.pixels.assign(64, 200);
    Image small = resize(flat, 3, 5);
    EXPECT_EQ(small.width, 3u);
    EXPECT_EQ(small.height, 5u);
    for (uint8_t p : small.pixels) EXPECT_EQ(p, 200);
    Image big = fit(img, 64, 64);
    EXPECT_EQ(big.width, 64u);
    EXPECT_EQ(big.height, 64u);
    EXPECT_EQ(fit(img, 40, 20).pixels, img.pixels);
    // Halving a 2x2 checker of 0 / 255 gives the linear-light mean, not 128.
    Image checker;
    checker.width = 2;
    checker.height = 2;
    checker.channels = 1;
    checker.pixels = {0, 255, 255, 0};
    EXPECT_EQ(resize(checker, 1, 1).pixels[0], 188);
}

}  // namespace
}  // namespace sd::image
