// The linear latent -> RGB preview maps of the latent spaces, the values
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

// FLUX.1's 16-channel latents (the reference's flux_latent_rgb_proj / _bias).
inline constexpr float kFluxLatentRgb[16][3] = {
    {-0.041168f, 0.019917f, 0.097253f},   {0.028096f, 0.026730f, 0.129576f},
    {0.065618f, -0.067950f, -0.014651f},  {-0.012998f, -0.014762f, 0.081251f},
    {0.078567f, 0.059296f, -0.024687f},   {-0.015987f, -0.003697f, 0.005012f},
    {0.033605f, 0.138999f, 0.068517f},    {-0.024450f, -0.063567f, -0.030101f},
    {-0.040194f, -0.016710f, 0.127185f},  {0.112681f, 0.088764f, -0.041940f},
    {-0.023498f, 0.093664f, 0.025543f},   {0.082899f, 0.048320f, 0.007491f},
    {0.075712f, 0.074139f, 0.081965f},    {-0.143501f, 0.018263f, -0.136138f},
    {-0.025767f, -0.082035f, -0.040023f}, {-0.111849f, -0.055589f, -0.032361f}};

// SD 1.x / 2.x, SDXL and FLUX with their biases.
inline constexpr LatentRgbProjection kSdRgb{kSdLatentRgb, {}};
inline constexpr LatentRgbProjection kSdxlRgb{kSdxlLatentRgb, {0.1084f, -0.0175f, -0.0011f}};
inline constexpr LatentRgbProjection kFluxRgb{kFluxLatentRgb, {0.024600f, -0.006937f, -0.008089f}};

}  // namespace sd
