#include "image/video_writer.h"

#include <webp/encode.h>
#include <webp/mux.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "image/webm_writer.h"
#include "io/file_output.h"

namespace sd::image {
namespace {

void check_frames(std::span<const Image> frames, int fps) {
    SD_CHECK(!frames.empty(), "a video needs at least one frame");
    SD_CHECK(fps >= 1, "a video's fps must be at least 1 (got %d)", fps);
    const Image& first = frames[0];
    for (size_t i = 0; i < frames.size(); ++i) {
        const Image& f = frames[i];
        SD_CHECK(f.channels == 3 && f.width == first.width && f.height == first.height &&
                     f.pixels.size() == size_t{f.width} * f.height * 3,
                 "video frame %zu is %ux%u with %u channels; the video's frames are %ux%u RGB", i,
                 f.width, f.height, f.channels, first.width, first.height);
    }
}

// Little-endian RIFF pieces.
struct Riff {
    std::vector<uint8_t> bytes;

    void fourcc(const char* c) { bytes.insert(bytes.end(), c, c + 4); }
    void u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
    void u16(uint16_t v) {
        bytes.push_back(static_cast<uint8_t>(v));
        bytes.push_back(static_cast<uint8_t>(v >> 8));
    }
    // Starts a chunk (or a LIST, `list` its type): returns where its size goes.
    size_t open(const char* id, const char* list = nullptr) {
        fourcc(id);
        const size_t at = bytes.size();
        u32(0);
        if (list) fourcc(list);
        return at;
    }
    // The size excludes the pad byte that keeps the next chunk word-aligned.
    void close(size_t at) {
        const auto size = static_cast<uint32_t>(bytes.size() - at - 4);
        for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(size >> (8 * i));
        if (bytes.size() % 2) bytes.push_back(0);
    }
};

// RIFF 'AVI ': hdrl (avih, one strl: strh 'vids'/'MJPG', strf BITMAPINFOHEADER), movi (a
// '00dc' chunk a frame), idx1 (every frame a key frame; offsets from the 'movi' type).
std::vector<uint8_t> mjpeg_avi(std::span<const Image> frames, int fps, int quality) {
    std::vector<std::vector<uint8_t>> jpegs;
    size_t largest = 0;
    for (const Image& f : frames) {
        jpegs.push_back(encode_image(Format::Jpeg, f, "", quality));
        largest = std::max(largest, jpegs.back().size());
    }
    const uint32_t w = frames[0].width, h = frames[0].height;
    const auto n = static_cast<uint32_t>(frames.size());
    constexpr uint32_t kHasIndex = 0x10, kKeyFrame = 0x10;
    Riff r;
    const size_t riff = r.open("RIFF", "AVI ");
    const size_t hdrl = r.open("LIST", "hdrl");
    const size_t avih = r.open("avih");
    r.u32(1000000u / static_cast<uint32_t>(fps));                        // microseconds a frame
    r.u32(static_cast<uint32_t>(largest) * static_cast<uint32_t>(fps));  // max bytes a second
    r.u32(0);                                                            // padding granularity
    r.u32(kHasIndex);
    r.u32(n);
    r.u32(0);  // initial frames
    r.u32(1);  // streams
    r.u32(static_cast<uint32_t>(largest));
    r.u32(w);
    r.u32(h);
    for (int i = 0; i < 4; ++i) r.u32(0);
    r.close(avih);
    const size_t strl = r.open("LIST", "strl");
    const size_t strh = r.open("strh");
    r.fourcc("vids");
    r.fourcc("MJPG");
    r.u32(0);  // flags
    r.u16(0);  // priority
    r.u16(0);  // language
    r.u32(0);  // initial frames
    r.u32(1);  // scale: rate / scale frames a second
    r.u32(static_cast<uint32_t>(fps));
    r.u32(0);  // start
    r.u32(n);  // length in frames
    r.u32(static_cast<uint32_t>(largest));
    r.u32(0xFFFFFFFFu);  // quality: the default
    r.u32(0);            // sample size: varies
    r.u16(0);            // rcFrame: left, top, right, bottom
    r.u16(0);
    r.u16(static_cast<uint16_t>(w));
    r.u16(static_cast<uint16_t>(h));
    r.close(strh);
    const size_t strf = r.open("strf");
    r.u32(40);  // BITMAPINFOHEADER's size
    r.u32(w);
    r.u32(h);
    r.u16(1);   // planes
    r.u16(24);  // bits a pixel
    r.fourcc("MJPG");
    r.u32(w * h * 3);
    for (int i = 0; i < 4; ++i) r.u32(0);  // resolution, colours used, colours important
    r.close(strf);
    r.close(strl);
    r.close(hdrl);
    const size_t movi = r.open("LIST", "movi");
    const size_t movi_type = movi + 4;
    std::vector<std::pair<uint32_t, uint32_t>> index;  // offset, size
    for (const std::vector<uint8_t>& jpeg : jpegs) {
        index.emplace_back(static_cast<uint32_t>(r.bytes.size() - movi_type),
                           static_cast<uint32_t>(jpeg.size()));
        const size_t chunk = r.open("00dc");
        r.bytes.insert(r.bytes.end(), jpeg.begin(), jpeg.end());
        r.close(chunk);
    }
    r.close(movi);
    const size_t idx1 = r.open("idx1");
    for (const auto& [offset, size] : index) {
        r.fourcc("00dc");
        r.u32(kKeyFrame);
        r.u32(offset);
        r.u32(size);
    }
    r.close(idx1);
    r.close(riff);
    return std::move(r.bytes);
}

// libwebpmux's animation encoder: each frame shown 1000 / fps ms, lossy at `quality`.
std::vector<uint8_t> animated_webp(std::span<const Image> frames, int fps, int quality) {
    const int w = static_cast<int>(frames[0].width), h = static_cast<int>(frames[0].height);
    WebPAnimEncoderOptions options;
    SD_CHECK(WebPAnimEncoderOptionsInit(&options), "libwebpmux: version mismatch");
    WebPConfig config;
    SD_CHECK(WebPConfigInit(&config), "libwebp: version mismatch");
    config.quality = static_cast<float>(std::clamp(quality, 1, 100));
    std::unique_ptr<WebPAnimEncoder, void (*)(WebPAnimEncoder*)> encoder(
        WebPAnimEncoderNew(w, h, &options), WebPAnimEncoderDelete);
    SD_CHECK(encoder != nullptr, "libwebpmux: cannot start a %dx%d animation", w, h);
    int timestamp = 0;
    for (const Image& f : frames) {
        WebPPicture picture;
        SD_CHECK(WebPPictureInit(&picture), "libwebp: version mismatch");
        picture.width = w;
        picture.height = h;
        picture.use_argb = 1;
        const bool ok = WebPPictureImportRGB(&picture, f.pixels.data(), w * 3) &&
                        WebPAnimEncoderAdd(encoder.get(), &picture, timestamp, &config);
        WebPPictureFree(&picture);
        SD_CHECK(ok, "libwebpmux: cannot add a frame: %s", WebPAnimEncoderGetError(encoder.get()));
        timestamp += 1000 / fps;
    }
    SD_CHECK(WebPAnimEncoderAdd(encoder.get(), nullptr, timestamp, nullptr),
             "libwebpmux: cannot end the animation: %s", WebPAnimEncoderGetError(encoder.get()));
    WebPData data;
    WebPDataInit(&data);
    SD_CHECK(WebPAnimEncoderAssemble(encoder.get(), &data),
             "libwebpmux: cannot assemble the animation: %s",
             WebPAnimEncoderGetError(encoder.get()));
    std::vector<uint8_t> out(data.bytes, data.bytes + data.size);
    WebPDataClear(&data);
    return out;
}

}  // namespace

std::vector<uint8_t> encode_video(VideoFormat format, std::span<const Image> frames, int fps,
                                  int quality) {
    check_frames(frames, fps);
    switch (format) {
        case VideoFormat::AnimatedWebp:
            return animated_webp(frames, fps, quality);
        case VideoFormat::WebmVp8:
            return webm_vp8(frames, fps, quality);
        default:
            return mjpeg_avi(frames, fps, quality);
    }
}

VideoFormat video_format_from_path(const std::string& path) {
    std::string ext = path.substr(std::min(path.size(), path.rfind('.')));
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".webp") return VideoFormat::AnimatedWebp;
    return ext == ".webm" ? VideoFormat::WebmVp8 : VideoFormat::MjpegAvi;
}

void write_video(const std::string& path, std::span<const Image> frames, int fps, int quality) {
    const std::vector<uint8_t> bytes =
        encode_video(video_format_from_path(path), frames, fps, quality);
    FileOutput out(path);
    out.write(bytes.data(), bytes.size());
    out.commit();
}

}  // namespace sd::image
