// Video files: the MJPEG AVI's RIFF structure read back field by field (headers, one JPEG a
// frame that decodes to the frame's size, the index pointing at each frame's chunk), the
// animated WebP's frames, and bad frame lists and unwritable paths refused by name.
#include "image/video_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/error.h"
#include "io/io_test_util.h"

namespace sd::image {
namespace {

Image frame(uint32_t w, uint32_t h, uint8_t shade) {
    Image f{w, h, 3, std::vector<uint8_t>(size_t{w} * h * 3)};
    for (size_t i = 0; i < f.pixels.size(); ++i) f.pixels[i] = static_cast<uint8_t>(shade + i % 7);
    return f;
}

uint32_t u32(const std::vector<uint8_t>& b, size_t at) {
    return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | static_cast<uint32_t>(b[at + 3]) << 24;
}

std::string fourcc(const std::vector<uint8_t>& b, size_t at) {
    return std::string(reinterpret_cast<const char*>(b.data() + at), 4);
}

size_t find(const std::vector<uint8_t>& b, const std::string& text, size_t from = 0) {
    const auto it = std::search(b.begin() + static_cast<std::ptrdiff_t>(from), b.end(),
                                text.begin(), text.end());
    return it == b.end() ? std::string::npos : static_cast<size_t>(it - b.begin());
}

TEST(VideoWriter, MjpegAviHeadersFramesAndIndex) {
    const std::vector<Image> frames = {frame(16, 8, 10), frame(16, 8, 100), frame(16, 8, 200)};
    const std::vector<uint8_t> avi = encode_video(VideoFormat::MjpegAvi, frames, 16);
    ASSERT_GT(avi.size(), 100u);
    EXPECT_EQ(fourcc(avi, 0), "RIFF");
    EXPECT_EQ(u32(avi, 4), avi.size() - 8);
    EXPECT_EQ(fourcc(avi, 8), "AVI ");
    const size_t avih = find(avi, "avih");
    ASSERT_NE(avih, std::string::npos);
    EXPECT_EQ(u32(avi, avih + 8), 1000000u / 16);  // microseconds a frame
    EXPECT_EQ(u32(avi, avih + 8 + 16), 3u);        // frames
    EXPECT_EQ(u32(avi, avih + 8 + 32), 16u);       // width
    EXPECT_EQ(u32(avi, avih + 8 + 36), 8u);        // height
    const size_t strh = find(avi, "strh");
    ASSERT_NE(strh, std::string::npos);
    EXPECT_EQ(fourcc(avi, strh + 8), "vids");
    EXPECT_EQ(fourcc(avi, strh + 12), "MJPG");
    EXPECT_EQ(u32(avi, strh + 8 + 24), 16u);  // rate (scale 1)
    EXPECT_EQ(u32(avi, strh + 8 + 32), 3u);   // length
    const size_t movi = find(avi, "movi");
    const size_t idx1 = find(avi, "idx1");
    ASSERT_NE(movi, std::string::npos);
    ASSERT_NE(idx1, std::string::npos);
    EXPECT_EQ(u32(avi, idx1 + 4), 3u * 16u);
    for (uint32_t i = 0; i < 3; ++i) {
        const size_t entry = idx1 + 8 + 16 * i;
        EXPECT_EQ(fourcc(avi, entry), "00dc");
        const size_t chunk = movi + u32(avi, entry + 8);
        ASSERT_LT(chunk + 8, avi.size());
        EXPECT_EQ(fourcc(avi, chunk), "00dc") << "frame " << i;
        const uint32_t size = u32(avi, chunk + 4);
        EXPECT_EQ(size, u32(avi, entry + 12));
        const Image back = decode_image(avi.data() + chunk + 8, size, 3, "frame");
        EXPECT_EQ(back.width, 16u);
        EXPECT_EQ(back.height, 8u);
        EXPECT_NEAR(back.pixels[0], frames[i].pixels[0], 12) << "frame " << i;
    }
}

TEST(VideoWriter, AnimatedWebpHasAFrameEach) {
    const std::vector<Image> frames = {frame(16, 16, 0), frame(16, 16, 90), frame(16, 16, 180)};
    const std::vector<uint8_t> webp = encode_video(VideoFormat::AnimatedWebp, frames, 8);
    EXPECT_EQ(fourcc(webp, 0), "RIFF");
    EXPECT_EQ(fourcc(webp, 8), "WEBP");
    EXPECT_NE(find(webp, "ANIM"), std::string::npos);
    int count = 0;
    for (size_t at = find(webp, "ANMF"); at != std::string::npos; at = find(webp, "ANMF", at + 4))
        ++count;
    EXPECT_EQ(count, 3);
}

TEST(VideoWriter, TheFormatFollowsTheExtension) {
    EXPECT_EQ(video_format_from_path("clip.webp"), VideoFormat::AnimatedWebp);
    EXPECT_EQ(video_format_from_path("CLIP.WEBP"), VideoFormat::AnimatedWebp);
    EXPECT_EQ(video_format_from_path("clip.avi"), VideoFormat::MjpegAvi);
    EXPECT_EQ(video_format_from_path("out/clip"), VideoFormat::MjpegAvi);
}

TEST(VideoWriter, BadFramesAndPathsAreNamed) {
    EXPECT_ERROR_CONTAINS(encode_video(VideoFormat::MjpegAvi, {}, 16), "at least one frame");
    const std::vector<Image> mixed = {frame(16, 8, 0), frame(8, 8, 0)};
    EXPECT_ERROR_CONTAINS(encode_video(VideoFormat::MjpegAvi, mixed, 16), "video frame 1 is 8x8");
    const std::vector<Image> one = {frame(8, 8, 0)};
    EXPECT_ERROR_CONTAINS(encode_video(VideoFormat::AnimatedWebp, one, 0), "fps");
    EXPECT_ERROR_CONTAINS(write_video("/nonexistent/folder/clip.avi", one, 16), "clip.avi");
    const std::string path = test::temp_path("clip.avi");
    write_video(path, one, 16);
    EXPECT_EQ(read_file_bytes(path).size(), encode_video(VideoFormat::MjpegAvi, one, 16).size());
    EXPECT_FALSE(std::filesystem::exists(path + ".part"));
    std::remove(path.c_str());
}

}  // namespace
}  // namespace sd::image
