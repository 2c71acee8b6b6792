// The WebM writer: its EBML read back element by element (the header's DocType, the track's
// codec and size, a SimpleBlock a frame with key frames where clusters start, the timecodes
// from the fps), and each block decoded by libvpx's VP8 decoder close to its frame.
#include "image/webm_writer.h"

#include <gtest/gtest.h>
#include <vpx/vp8dx.h>
#include <vpx/vpx_decoder.h>

#include <cmath>
#include <cstring>
#include <string>

#include "image/video_writer.h"
#include "image_compare.h"

namespace sd::image {
namespace {

// A smooth frame that moves with `t` (VP8 keeps such content well).
Image moving_frame(uint32_t w, uint32_t h, int t) {
    Image f{w, h, 3, std::vector<uint8_t>(size_t{w} * h * 3)};
    for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) {
            uint8_t* p = &f.pixels[(size_t{y} * w + x) * 3];
            p[0] = static_cast<uint8_t>(128 + 100 * std::sin(0.15 * (x + 2 * t)));
            p[1] = static_cast<uint8_t>(128 + 100 * std::cos(0.2 * (y + t)));
            p[2] = static_cast<uint8_t>((x + y + 4 * t) % 256);
        }
    }
    return f;
}

struct Element {
    uint32_t id = 0;
    size_t data = 0, size = 0;  // the payload's offset and length
};

// The element at `at`: its ID (length marker kept, as the spec writes IDs) and size.
Element read_element(const std::vector<uint8_t>& b, size_t at) {
    Element e;
    int n = 1;
    while (n <= 4 && !(b.at(at) & (0x80 >> (n - 1)))) ++n;
    for (int i = 0; i < n; ++i) e.id = e.id << 8 | b.at(at + i);
    at += n;
    int m = 1;
    while (m <= 8 && !(b.at(at) & (0x80 >> (m - 1)))) ++m;
    uint64_t size = b.at(at) & (0xFF >> m);
    for (int i = 1; i < m; ++i) size = size << 8 | b.at(at + i);
    e.data = at + m;
    e.size = static_cast<size_t>(size);
    return e;
}

std::vector<Element> children(const std::vector<uint8_t>& b, const Element& parent) {
    std::vector<Element> out;
    for (size_t at = parent.data; at < parent.data + parent.size;) {
        out.push_back(read_element(b, at));
        at = out.back().data + out.back().size;
    }
    return out;
}

const Element* child(const std::vector<Element>& list, uint32_t id) {
    for (const Element& e : list)
        if (e.id == id) return &e;
    return nullptr;
}

uint64_t uint_value(const std::vector<uint8_t>& b, const Element& e) {
    uint64_t v = 0;
    for (size_t i = 0; i < e.size; ++i) v = v << 8 | b[e.data + i];
    return v;
}

std::string string_value(const std::vector<uint8_t>& b, const Element& e) {
    return std::string(reinterpret_cast<const char*>(b.data() + e.data), e.size);
}

// One decoded VP8 frame back to RGB (BT.601 limited range), for the comparison.
std::vector<uint8_t> to_rgb(const vpx_image_t& img) {
    std::vector<uint8_t> out(size_t{img.d_w} * img.d_h * 3);
    for (uint32_t y = 0; y < img.d_h; ++y) {
        for (uint32_t x = 0; x < img.d_w; ++x) {
            const double Y = 1.164 * (img.planes[0][y * img.stride[0] + x] - 16);
            const double U = img.planes[1][y / 2 * img.stride[1] + x / 2] - 128;
            const double V = img.planes[2][y / 2 * img.stride[2] + x / 2] - 128;
            const double rgb[3] = {Y + 1.596 * V, Y - 0.392 * U - 0.813 * V, Y + 2.017 * U};
            for (int c = 0; c < 3; ++c)
                out[(size_t{y} * img.d_w + x) * 3 + c] =
                    static_cast<uint8_t>(std::lround(std::clamp(rgb[c], 0.0, 255.0)));
        }
    }
    return out;
}

TEST(WebmWriter, EbmlTrackAndAVp8BlockAFrame) {
    constexpr int kFps = 16;
    for (const auto& [w, h] : {std::pair{48u, 32u}, std::pair{33u, 17u}}) {
        std::vector<Image> frames;
        for (int t = 0; t < 40; ++t) frames.push_back(moving_frame(w, h, t));
        const std::vector<uint8_t> webm = encode_video(VideoFormat::WebmVp8, frames, kFps, 90);

        const Element header = read_element(webm, 0);
        ASSERT_EQ(header.id, 0x1A45DFA3u);
        const std::vector<Element> header_parts = children(webm, header);
        const Element* doc_type = child(header_parts, 0x4282);
        ASSERT_NE(doc_type, nullptr);
        EXPECT_EQ(string_value(webm, *doc_type), "webm");
        const Element segment = read_element(webm, header.data + header.size);
        ASSERT_EQ(segment.id, 0x18538067u);
        EXPECT_EQ(segment.data + segment.size, webm.size());
        const std::vector<Element> parts = children(webm, segment);
        const Element* tracks = child(parts, 0x1654AE6B);
        ASSERT_NE(tracks, nullptr);
        const std::vector<Element> entry = children(webm, children(webm, *tracks).at(0));
        EXPECT_EQ(string_value(webm, *child(entry, 0x86)), "V_VP8");
        const std::vector<Element> video = children(webm, *child(entry, 0xE0));
        EXPECT_EQ(uint_value(webm, *child(video, 0xB0)), w);
        EXPECT_EQ(uint_value(webm, *child(video, 0xBA)), h);

        vpx_codec_ctx_t decoder;
        ASSERT_EQ(vpx_codec_dec_init(&decoder, vpx_codec_vp8_dx(), nullptr, 0), VPX_CODEC_OK);
        int index = 0, clusters = 0;
        for (const Element& cluster : parts) {
            if (cluster.id != 0x1F43B675) continue;
            ++clusters;
            const std::vector<Element> blocks = children(webm, cluster);
            ASSERT_EQ(blocks.at(0).id, 0xE7u);  // the cluster's timecode first
            const uint64_t cluster_ms = uint_value(webm, blocks[0]);
            for (size_t i = 1; i < blocks.size(); ++i, ++index) {
                const Element& block = blocks[i];
                ASSERT_EQ(block.id, 0xA3u);
                EXPECT_EQ(webm[block.data], 0x81);  // track 1
                const auto relative =
                    static_cast<int16_t>(webm[block.data + 1] << 8 | webm[block.data + 2]);
                EXPECT_EQ(cluster_ms + relative, static_cast<uint64_t>(index * 1000 / kFps));
                EXPECT_EQ((webm[block.data + 3] & 0x80) != 0, i == 1) << "block " << index;
                ASSERT_EQ(vpx_codec_decode(&decoder, webm.data() + block.data + 4,
                                           static_cast<unsigned>(block.size - 4), nullptr, 0),
                          VPX_CODEC_OK);
                vpx_codec_iter_t it = nullptr;
                const vpx_image_t* img = vpx_codec_get_frame(&decoder, &it);
                ASSERT_NE(img, nullptr);
                ASSERT_EQ(img->d_w, w);
                ASSERT_EQ(img->d_h, h);
                EXPECT_GT(test::psnr(to_rgb(*img), frames[index].pixels), 30.0)
                    << "frame " << index;
            }
        }
        vpx_codec_destroy(&decoder);
        EXPECT_EQ(index, 40);
        EXPECT_EQ(clusters, 2);  // a key frame every 2 s: at frames 0 and 32
    }
}

TEST(WebmWriter, TheExtensionPicksIt) {
    EXPECT_EQ(video_format_from_path("clip.webm"), VideoFormat::WebmVp8);
    EXPECT_EQ(video_format_from_path("CLIP.WEBM"), VideoFormat::WebmVp8);
}

}  // namespace
}  // namespace sd::image
