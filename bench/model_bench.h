// sd-bench --model: a whole model's figures at one image size: seconds per UNet pass (and
// ControlNet pass with --control-net), per sampling step (two passes with CFG) and for the
// VAE decode, each with GFLOP/s and % of
// the measured peak (FLOPs as counted by ops/flop_counter.h), and the process's peak RSS.
#pragma once

#include <string>

namespace sd::bench {

struct ModelBenchOptions {
    std::string model;
    std::string tokenizer_dir;
    int width = 512, height = 512;
    int steps = 3;            // sampling steps timed (plus one VAE decode)
    bool streamed = false;    // --params-backend disk (Residency::Streamed)
    std::string control_net;  // --control-net: a ControlNet runs with each pass (its own row)
};

int run_model_bench(const ModelBenchOptions& options, double peak_gflops);

}  // namespace sd::bench
