#include "upscale_bench.h"

#include <cstdio>

#include "base/clock.h"
#include "base/thread_pool.h"
#include "model_bench.h"
#include "ops/flop_counter.h"
#include "pipeline/upscaler.h"

namespace sd::bench {

int run_upscale_bench(const UpscaleBenchOptions& o, double peak) {
    double t0 = now_seconds();
    Upscaler upscaler(o.model, o.tile_size);
    std::printf("upscaler %s loaded in %.2f s: %d blocks, %dx\n", o.model.c_str(),
                now_seconds() - t0, upscaler.layout().num_blocks, upscaler.scale());
    // A smooth deterministic picture (gradients and a pattern), 3 channels.
    image::Image input;
    input.width = static_cast<uint32_t>(o.width);
    input.height = static_cast<uint32_t>(o.height);
    input.channels = 3;
    input.pixels.resize(static_cast<size_t>(o.width) * o.height * 3);
    for (int y = 0; y < o.height; ++y) {
        for (int x = 0; x < o.width; ++x) {
            uint8_t* p = &input.pixels[(static_cast<size_t>(y) * o.width + x) * 3];
            p[0] = static_cast<uint8_t>(255 * x / o.width);
            p[1] = static_cast<uint8_t>(255 * y / o.height);
            p[2] = static_cast<uint8_t>(((x / 8 + y / 8) % 2) * 200 + 20);
        }
    }
    reset_flop_counter();
    t0 = now_seconds();
    const double c0 = cpu_seconds();
    const image::Image out = upscaler.upscale(input);
    const double seconds = now_seconds() - t0, cpu = cpu_seconds() - c0;
    std::printf("\n%dx%d -> %ux%u, tiles of %d, %d threads, measured peak %.1f GFLOP/s\n", o.width,
                o.height, out.width, out.height, o.tile_size, num_threads(), peak);
    print_row("upscale", seconds, cpu, counted_flops(), peak);
    std::printf("%-22s %10.1f MiB (RSS now %.1f MiB)\n", "peak RSS", peak_rss_mib(),
                current_rss_mib());
    return 0;
}

}  // namespace sd::bench
