// Running an image-to-image function over overlapping tiles so that memory stays bounded,
// as stable-diffusion.cpp's process_tiles_2d (the ESRGAN upscaler's tiling): tiles spread
// evenly with about the requested overlap, each output tile weighted by a smootherstep ramp
// across the parts it shares with a neighbour. Neighbours' ramps sum to one and no point
// lies in three tiles along an axis, so the blended result needs no normalisation.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tensor/tensor.h"

namespace sd {

// One tile along an axis: where it starts and how much it shares with the tile before
// and the tile after it.
struct TileSpan {
    int64_t offset = 0;
    int64_t overlap_before = 0, overlap_after = 0;
};

// Tiles of `tile` covering [0, size), adjacent ones overlapping by about `overlap` of a
// tile (0 <= overlap < 1); one tile at 0 when it covers the whole axis.
std::vector<TileSpan> plan_tiles(int64_t size, int64_t tile, float overlap);

// fn maps a [1, C, th, tw] tile of `input` ([1, C, H, W]) to [1, C', th * scale, tw * scale];
// the blended result is [1, C', H * scale, W * scale]. Tiles are `tile` input pixels a side
// (fewer where the image is smaller).
Tensor process_tiles(const Tensor& input, int scale, int tile, float overlap,
                     const std::function<Tensor(const Tensor&)>& fn);

}  // namespace sd
