// The Canny preprocessor against an independent numpy reimplementation of the reference
// program's (tests/image/canny_reference.py) on a picture with edges of every direction,
// and cases worked out by hand.
#include "image/canny.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "fixture_files.h"
#include "stable-diffusion.h"
#include "test_util.h"

namespace sd::image {
namespace {

// Shapes with edges in every direction, a soft gradient and some noise.
Image test_picture(uint32_t w, uint32_t h) {
    Image img{w, h, 3, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
    uint32_t state = 12345;
    for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) {
            const float dx = x - w * 0.4f, dy = y - h * 0.55f;
            const bool disc = dx * dx + dy * dy < (w * 0.25f) * (w * 0.25f);
            const bool bar = x > w * 0.7f && x < w * 0.85f && y > h * 0.1f;
            const bool tri = y < h * 0.3f && x < y + w * 0.1f && x > w * 0.1f;
            state = state * 1664525u + 1013904223u;
            const int noise = static_cast<int>(state >> 28) - 8;
            for (uint32_t c = 0; c < 3; ++c) {
                int v = static_cast<int>(x * 100 / w) + (disc ? 120 : 0) + (bar ? 90 - 30 * c : 0) +
                        (tri ? 60 * c : 0) + noise;
                img.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] =
                    static_cast<uint8_t>(std::clamp(v, 0, 255));
            }
        }
    }
    return img;
}

void write_ppm(const std::string& path, const Image& img) {
    std::ofstream out(path, std::ios::binary);
    out << "P6\n" << img.width << " " << img.height << "\n255\n";
    out.write(reinterpret_cast<const char*>(img.pixels.data()),
              static_cast<std::streamsize>(img.pixels.size()));
}

std::vector<uint8_t> read_ppm_pixels(const std::string& path, size_t bytes) {
    std::ifstream in(path, std::ios::binary);
    std::string magic;
    int w = 0, h = 0, max = 0;
    in >> magic >> w >> h >> max;
    in.get();
    std::vector<uint8_t> out(bytes);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(bytes));
    return out;
}

Image reference_canny(const Image& img, const CannyOptions& o) {
    const std::string in = test::temp_path("canny_in.ppm");
    const std::string out = test::temp_path("canny_out.ppm");
    write_ppm(in, img);
    test::run_or_fail(
        "/usr/bin/python3 " + test::tests_source_dir() + "/image/canny_reference.py " + in + " " +
        out + " " + std::to_string(o.high_threshold) + " " + std::to_string(o.low_threshold) + " " +
        std::to_string(o.weak) + " " + std::to_string(o.strong) + " " + (o.inverse ? "1" : "0"));
    Image result = img;
    result.pixels = read_ppm_pixels(out, img.pixels.size());
    return result;
}

void expect_close_to_reference(const CannyOptions& o) {
    const Image picture = test_picture(96, 80);
    Image ours = picture;
    canny(ours, o);
    const Image theirs = reference_canny(picture, o);
    const auto strong = static_cast<uint8_t>((o.inverse ? 1.0f - o.strong : o.strong) * 255.0f);
    size_t differ = 0, edges = 0;
    for (size_t i = 0; i < ours.pixels.size(); ++i) {
        differ += ours.pixels[i] != theirs.pixels[i];
        edges += theirs.pixels[i] == strong;
    }
    std::printf("%zu of %zu bytes differ, %zu strong\n", differ, ours.pixels.size(), edges);
    EXPECT_GT(edges, ours.pixels.size() / 50);  // a real edge map, not an empty one
    // The two compute atan2 / exp in their own libraries; a pixel may tip at a threshold.
    EXPECT_LE(differ, ours.pixels.size() / 500) << differ << " of " << ours.pixels.size();
}

TEST(Canny, MatchesTheNumpyReimplementation) {
    expect_close_to_reference({});
}

TEST(Canny, MatchesTheNumpyReimplementationInverseAndOtherThresholds) {
    expect_close_to_reference({0.2f, 0.3f, 0.5f, 0.9f, true});
}

TEST(Canny, FlatImageHasNoEdges) {
    Image flat{20, 16, 3, std::vector<uint8_t>(20 * 16 * 3, 140)};
    Image inverse = flat;
    canny(flat);
    for (uint8_t v : flat.pixels) ASSERT_EQ(v, 0);
    canny(inverse, {0.08f, 0.08f, 0.8f, 1.0f, true});
    for (uint8_t v : inverse.pixels) ASSERT_EQ(v, 255);
}

// A vertical step: the gradient is horizontal (angle 0), so the pixels above and below
// have the same magnitude and the two columns at the step are kept as the strongest; the
// gradient reaches three columns either side, nothing beyond; the 3-pixel border is cleared.
TEST(Canny, VerticalStepGivesColumnsOfEdges) {
    const uint32_t w = 24, h = 12;
    Image step{w, h, 3, std::vector<uint8_t>(w * h * 3)};
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = w / 2; x < w; ++x)
            for (uint32_t c = 0; c < 3; ++c) step.pixels[(y * w + x) * 3 + c] = 255;
    canny(step);
    for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) {
            const uint8_t v = step.pixels[(y * w + x) * 3];
            const bool inside = x >= 3 && x <= w - 3 && y >= 3 && y <= h - 3;
            if (!inside || x < w / 2 - 3 || x > w / 2 + 2) {
                EXPECT_EQ(v, 0) << x << "," << y;
            }
        }
        // Row h - 3 reads the zero padding below through the blur: weaker than the row
        // above, so suppressed.
        if (y >= 3 && y <= h - 4) {
            EXPECT_EQ(step.pixels[(y * w + w / 2) * 3], 255) << y;  // at the step: strongest
            EXPECT_EQ(step.pixels[(y * w + w / 2 - 1) * 3], 255) << y;
        }
    }
}

TEST(Canny, CApiWorksInPlaceAndRefusesNoImage) {
    Image picture = test_picture(40, 32);
    Image expected = picture;
    canny(expected);
    sd_image_t c_image{picture.width, picture.height, 3, picture.pixels.data()};
    ASSERT_TRUE(preprocess_canny(c_image, 0.08f, 0.08f, 0.8f, 1.0f, false));
    EXPECT_EQ(picture.pixels, expected.pixels);
    EXPECT_FALSE(preprocess_canny(sd_image_t{0, 0, 3, nullptr}, 0.08f, 0.08f, 0.8f, 1.0f, false));
    uint8_t two[8] = {};
    EXPECT_FALSE(preprocess_canny(sd_image_t{2, 2, 2, two}, 0.08f, 0.08f, 0.8f, 1.0f, false));
}

}  // namespace
}  // namespace sd::image
