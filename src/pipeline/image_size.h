// The sizes a generation runs at, settled once for the C API, the CLI and the server as the
// reference does: each side rounded up to the model's grid (the latent factor times the
// diffusion model's down factor: 64 for the UNet families) with a warning, and the input
// images fitted to the rounded size.
#pragma once

#include <cstdint>

#include "pipeline/components.h"

namespace sd {

// The multiple both sides of a generated image align to (the family's, through its models).
int64_t size_multiple(const ModelComponents& model);

// Rounds width and height up to multiples of `multiple`, warning "align LABEL up WxH to
// W'xH' (multiple=M)" when either changes. Throws when a side is not positive.
void align_size_up(int& width, int& height, int64_t multiple, const char* label);

}  // namespace sd
