// The linear latent -> RGB preview maps of the 4-channel latent spaces, the values
// stable-diffusion.cpp's latent-preview.h takes from ComfyUI's latent_formats.py.
#pragma once

#include "pipeline/components.h"

namespace sd {

inline constexpr float kSdLatentRgb[4][3] = {{0.3512f, 0.2297f, 0.3227f},
                                             {0.3250f, 0.4974f, 0.2350f},
                                             {-0.2829f, 0.1762f, 0.2721f},
                                             {-0.2120f, -0.2616f, -0.7177f}};

inline constexpr float kSdxlLatentRgb[4][3] = {{0.3651f, 0.4232f, 0.4341f},
                                               {-0.2533f, -0.0042f, 0.1068f},
                                               {0.1076f, 0.1111f, -0.0362f},
                                               {-0.3165f, -0.2492f, -0.2188f}};

// SD 1.x / 2.x, and SDXL with its bias.
inline constexpr LatentRgbProjection kSdRgb{kSdLatentRgb, {}};
inline constexpr LatentRgbProjection kSdxlRgb{kSdxlLatentRgb, {0.1084f, -0.0175f, -0.0011f}};

}  // namespace sd
