#include "image/webm_writer.h"

#include <vpx/vp8cx.h>
#include <vpx/vpx_encoder.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "base/error.h"

namespace sd::image {
namespace {

struct EncodedFrame {
    std::vector<uint8_t> data;
    int64_t pts = 0;  // in frames
    bool key = false;
};

// RGB -> I420 (BT.601, limited range), chroma from the mean of each 2x2 block.
void rgb_to_i420(const Image& f, vpx_image_t& img) {
    const uint32_t w = f.width, h = f.height;
    const uint8_t* rgb = f.pixels.data();
    for (uint32_t y = 0; y < h; ++y) {
        uint8_t* row = img.planes[VPX_PLANE_Y] + static_cast<size_t>(y) * img.stride[VPX_PLANE_Y];
        for (uint32_t x = 0; x < w; ++x) {
            const uint8_t* p = rgb + (static_cast<size_t>(y) * w + x) * 3;
            row[x] = static_cast<uint8_t>(((66 * p[0] + 129 * p[1] + 25 * p[2] + 128) >> 8) + 16);
        }
    }
    for (uint32_t cy = 0; cy < (h + 1) / 2; ++cy) {
        uint8_t* u = img.planes[VPX_PLANE_U] + static_cast<size_t>(cy) * img.stride[VPX_PLANE_U];
        uint8_t* v = img.planes[VPX_PLANE_V] + static_cast<size_t>(cy) * img.stride[VPX_PLANE_V];
        for (uint32_t cx = 0; cx < (w + 1) / 2; ++cx) {
            int r = 0, g = 0, b = 0, n = 0;
            for (uint32_t y = 2 * cy; y < std::min(h, 2 * cy + 2); ++y) {
                for (uint32_t x = 2 * cx; x < std::min(w, 2 * cx + 2); ++x, ++n) {
                    const uint8_t* p = rgb + (static_cast<size_t>(y) * w + x) * 3;
                    r += p[0], g += p[1], b += p[2];
                }
            }
            r /= n, g /= n, b /= n;
            u[cx] = static_cast<uint8_t>(((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128);
            v[cx] = static_cast<uint8_t>(((112 * r - 94 * g - 18 * b + 128) >> 8) + 128);
        }
    }
}

// libvpx's VP8 encoder over the frames: constant quality (cq-level 4..56 from quality 100..0),
// one key frame every 2 s, every packet out as soon as its frame is in (no lag, no alt-ref).
class Vp8Encoder {
  public:
    Vp8Encoder(uint32_t w, uint32_t h, int fps, int quality) {
        vpx_codec_enc_cfg_t cfg;
        SD_CHECK(vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &cfg, 0) == VPX_CODEC_OK,
                 "libvpx: no VP8 encoder configuration");
        cfg.g_w = w;
        cfg.g_h = h;
        cfg.g_timebase = {1, fps};
        cfg.g_lag_in_frames = 0;
        cfg.g_threads = 1;
        cfg.rc_end_usage = VPX_CQ;
        // A ceiling for the constant-quality mode: ~2 bits a pixel a frame.
        cfg.rc_target_bitrate =
            static_cast<unsigned>(std::max<uint64_t>(256, uint64_t{w} * h * fps * 2 / 1000));
        cfg.kf_max_dist = static_cast<unsigned>(2 * fps);
        SD_CHECK(vpx_codec_enc_init(&codec_, vpx_codec_vp8_cx(), &cfg, 0) == VPX_CODEC_OK,
                 "libvpx: cannot start a %ux%u VP8 encoder: %s", w, h, vpx_codec_error(&codec_));
        open_ = true;
        const int cq = 4 + (100 - std::clamp(quality, 0, 100)) * 52 / 100;
        vpx_codec_control(&codec_, VP8E_SET_CQ_LEVEL, cq);
        SD_CHECK(vpx_img_alloc(&image_, VPX_IMG_FMT_I420, w, h, 16) != nullptr,
                 "libvpx: cannot allocate a %ux%u frame", w, h);
        image_open_ = true;
    }
    ~Vp8Encoder() {
        if (image_open_) vpx_img_free(&image_);
        if (open_) vpx_codec_destroy(&codec_);
    }
    Vp8Encoder(const Vp8Encoder&) = delete;
    Vp8Encoder& operator=(const Vp8Encoder&) = delete;

    void add(const Image& frame, int64_t pts) {
        rgb_to_i420(frame, image_);
        encode(&image_, pts);
    }
    std::vector<EncodedFrame> finish() {
        encode(nullptr, -1);
        return std::move(out_);
    }

  private:
    void encode(const vpx_image_t* img, int64_t pts) {
        SD_CHECK(vpx_codec_encode(&codec_, img, pts, 1, 0, VPX_DL_GOOD_QUALITY) == VPX_CODEC_OK,
                 "libvpx: cannot encode frame %lld: %s", static_cast<long long>(pts),
                 vpx_codec_error(&codec_));
        vpx_codec_iter_t it = nullptr;
        while (const vpx_codec_cx_pkt_t* pkt = vpx_codec_get_cx_data(&codec_, &it)) {
            if (pkt->kind != VPX_CODEC_CX_FRAME_PKT) continue;
            const auto* data = static_cast<const uint8_t*>(pkt->data.frame.buf);
            out_.push_back({{data, data + pkt->data.frame.sz},
                            pkt->data.frame.pts,
                            (pkt->data.frame.flags & VPX_FRAME_IS_KEY) != 0});
        }
    }

    vpx_codec_ctx_t codec_{};
    vpx_image_t image_{};
    bool open_ = false, image_open_ = false;
    std::vector<EncodedFrame> out_;
};

// EBML: an element is its ID (the bytes as the spec writes them, length marker included),
// its size as a variable-length integer (the shortest), then its payload.
using Bytes = std::vector<uint8_t>;

void put_id(Bytes& b, uint32_t id) {
    int n = id > 0xFFFFFF ? 4 : id > 0xFFFF ? 3 : id > 0xFF ? 2 : 1;
    while (n-- > 0) b.push_back(static_cast<uint8_t>(id >> (8 * n)));
}

void put_size(Bytes& b, uint64_t size) {
    int n = 1;
    while (n < 8 && size >= (uint64_t{1} << (7 * n)) - 1) ++n;  // all ones is "unknown"
    const uint64_t v = size | (uint64_t{1} << (7 * n));
    for (int i = n - 1; i >= 0; --i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Bytes element(uint32_t id, const Bytes& payload) {
    Bytes b;
    put_id(b, id);
    put_size(b, payload.size());
    b.insert(b.end(), payload.begin(), payload.end());
    return b;
}

Bytes uint_element(uint32_t id, uint64_t v) {
    Bytes payload;
    int n = 1;
    while (n < 8 && (v >> (8 * n)) != 0) ++n;
    for (int i = n - 1; i >= 0; --i) payload.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return element(id, payload);
}

Bytes float_element(uint32_t id, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Bytes payload;
    for (int i = 7; i >= 0; --i) payload.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    return element(id, payload);
}

Bytes string_element(uint32_t id, const char* s) {
    return element(id, Bytes(s, s + std::strlen(s)));
}

void append(Bytes& to, const Bytes& b) {
    to.insert(to.end(), b.begin(), b.end());
}

// Matroska / WebM element IDs.
enum : uint32_t {
    kEbml = 0x1A45DFA3,
    kEbmlVersion = 0x4286,
    kEbmlReadVersion = 0x42F7,
    kEbmlMaxIdLength = 0x42F2,
    kEbmlMaxSizeLength = 0x42F3,
    kDocType = 0x4282,
    kDocTypeVersion = 0x4287,
    kDocTypeReadVersion = 0x4285,
    kSegment = 0x18538067,
    kInfo = 0x1549A966,
    kTimecodeScale = 0x2AD7B1,
    kDuration = 0x4489,
    kMuxingApp = 0x4D80,
    kWritingApp = 0x5741,
    kTracks = 0x1654AE6B,
    kTrackEntry = 0xAE,
    kTrackNumber = 0xD7,
    kTrackUid = 0x73C5,
    kTrackType = 0x83,
    kCodecId = 0x86,
    kDefaultDuration = 0x23E383,
    kVideo = 0xE0,
    kPixelWidth = 0xB0,
    kPixelHeight = 0xBA,
    kCluster = 0x1F43B675,
    kTimecode = 0xE7,
    kSimpleBlock = 0xA3,
};

Bytes ebml_header() {
    Bytes h;
    for (const auto& [id, v] : {std::pair{kEbmlVersion, 1},
                                {kEbmlReadVersion, 1},
                                {kEbmlMaxIdLength, 4},
                                {kEbmlMaxSizeLength, 8}})
        append(h, uint_element(id, v));
    append(h, string_element(kDocType, "webm"));
    append(h, uint_element(kDocTypeVersion, 2));
    append(h, uint_element(kDocTypeReadVersion, 2));
    return element(kEbml, h);
}

Bytes tracks(uint32_t w, uint32_t h, int fps) {
    Bytes video;
    append(video, uint_element(kPixelWidth, w));
    append(video, uint_element(kPixelHeight, h));
    Bytes entry;
    append(entry, uint_element(kTrackNumber, 1));
    append(entry, uint_element(kTrackUid, 1));
    append(entry, uint_element(kTrackType, 1));  // video
    append(entry, string_element(kCodecId, "V_VP8"));
    append(entry, uint_element(kDefaultDuration, 1000000000ull / static_cast<uint64_t>(fps)));
    append(entry, element(kVideo, video));
    return element(kTracks, element(kTrackEntry, entry));
}

// The clusters: one opened at each key frame, and before a block's time from its cluster's
// would leave SimpleBlock's signed 16 bits.
Bytes clusters(const std::vector<EncodedFrame>& frames, int fps) {
    constexpr int64_t kMaxRelativeMs = 30000;
    Bytes out, cluster;
    int64_t cluster_ms = 0;
    auto close = [&] {
        if (!cluster.empty()) append(out, element(kCluster, cluster));
        cluster.clear();
    };
    for (const EncodedFrame& f : frames) {
        const int64_t ms = f.pts * 1000 / fps;
        if (cluster.empty() || f.key || ms - cluster_ms > kMaxRelativeMs) {
            close();
            cluster_ms = ms;
            append(cluster, uint_element(kTimecode, static_cast<uint64_t>(ms)));
        }
        const auto relative = static_cast<int16_t>(ms - cluster_ms);
        Bytes block = {0x81,  // track 1 as a variable-length integer
                       static_cast<uint8_t>(static_cast<uint16_t>(relative) >> 8),
                       static_cast<uint8_t>(relative & 0xFF),
                       static_cast<uint8_t>(f.key ? 0x80 : 0x00)};
        append(block, f.data);
        append(cluster, element(kSimpleBlock, block));
    }
    close();
    return out;
}

}  // namespace

std::vector<uint8_t> webm_vp8(std::span<const Image> frames, int fps, int quality) {
    const uint32_t w = frames[0].width, h = frames[0].height;
    Vp8Encoder encoder(w, h, fps, quality);
    for (size_t i = 0; i < frames.size(); ++i) encoder.add(frames[i], static_cast<int64_t>(i));
    const std::vector<EncodedFrame> encoded = encoder.finish();
    SD_CHECK(encoded.size() == frames.size(), "libvpx: %zu frames in, %zu out", frames.size(),
             encoded.size());
    Bytes info;
    append(info, uint_element(kTimecodeScale, 1000000));  // 1 ms
    append(info, float_element(kDuration, static_cast<double>(frames.size()) * 1000.0 / fps));
    append(info, string_element(kMuxingApp, "stable-diffusion"));
    append(info, string_element(kWritingApp, "stable-diffusion"));
    Bytes segment = element(kInfo, info);
    append(segment, tracks(w, h, fps));
    append(segment, clusters(encoded, fps));
    Bytes out = ebml_header();
    append(out, element(kSegment, segment));
    return out;
}

}  // namespace sd::image
