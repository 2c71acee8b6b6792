// sd-bench --upscale-model: the ESRGAN upscaler on a W x H image: seconds, GFLOP/s and % of
// the measured peak (the convolutions' FLOPs as counted by ops/flop_counter.h, over the
// whole upscale's time: tiling, blending and conversions included), and peak RSS.
#pragma once

#include <string>

namespace sd::bench {

struct UpscaleBenchOptions {
    std::string model;
    int width = 128, height = 128;
    int tile_size = 128;
};

int run_upscale_bench(const UpscaleBenchOptions& options, double peak_gflops);

}  // namespace sd::bench
