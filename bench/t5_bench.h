// sd-bench --t5 FILE: the T5 encoder (a --t5xxl file) on `tokens` ids (FLUX's 256): seconds,
// GFLOP/s and % of the measured peak (FLOPs: every linear 2*n*in*out and the attention
// 4*heads*n*n*head_dim, counted from the model's shape), and peak RSS.
#pragma once

#include <string>

namespace sd::bench {

struct T5BenchOptions {
    std::string model;
    int tokens = 256;
};

int run_t5_bench(const T5BenchOptions& options, double peak_gflops);

}  // namespace sd::bench
