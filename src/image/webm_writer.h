// A WebM file of VP8 frames, as the reference program writes a clip's .webm: libvpx encodes
// the frames (BT.601 I420, constant quality from `quality`, no alt-ref frames) and the muxer
// here writes Matroska's WebM subset around them:
//
//   EBML header (DocType "webm", version 2)
//   Segment
//     Info      TimecodeScale 1 ms, Duration, MuxingApp / WritingApp
//     Tracks    one TrackEntry: track 1, video, "V_VP8", DefaultDuration, PixelWidth/Height
//     Cluster   a new one at each key frame (and before a block's time would pass 30 s):
//               Timecode (ms), SimpleBlocks (track 1, time from the cluster's, key-frame flag)
//
// No Cues: a player reads such short clips front to back.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "image/image_io.h"

namespace sd::image {

// `frames`: 8-bit RGB of one size (checked by the caller); fps >= 1; quality 0..100.
// Throws sd::Error when libvpx refuses the size or a frame.
std::vector<uint8_t> webm_vp8(std::span<const Image> frames, int fps, int quality);

}  // namespace sd::image
