// Video files from frames, as the reference program writes a generated clip: an MJPEG AVI
// (RIFF 'AVI ' with one video stream of JPEG frames, an idx1 index; plays in every player), an
// animated WebP (libwebpmux's WebPAnimEncoder) or a WebM of VP8 frames (libvpx,
// image/webm_writer.h). Frames are 8-bit RGB of one size.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "image/image_io.h"

namespace sd::image {

enum class VideoFormat { MjpegAvi, AnimatedWebp, WebmVp8 };

// Throws sd::Error for no frames, frames of different sizes or channels, or fps < 1.
std::vector<uint8_t> encode_video(VideoFormat format, std::span<const Image> frames, int fps,
                                  int quality = 90);

// The format of a video path by its extension: ".webp" an animated WebP, ".webm" a WebM,
// anything else an AVI (the reference writes .avi whatever else the extension asked).
VideoFormat video_format_from_path(const std::string& path);

// Writes to PATH.part and renames it into place (no partial file under the final name).
void write_video(const std::string& path, std::span<const Image> frames, int fps, int quality = 90);

}  // namespace sd::image
