// sd-bench --llm FILE: prefill of the LLM text encoder (an --llm file) on `tokens` ids (a
// 512-token prompt by default): seconds, GFLOP/s and % of the measured peak -- the BF16 peak for
// bf16 weights under the default compute type (bf16 products), else the FP32 one (FLOPs: every
// linear 2*n*in*out and the causal attention 2*heads*n*(n+1)*head_dim, counted from the model's
// shape) -- and peak RSS. --llm-layers N times the first N blocks only (their hidden state is
// all a forward asked for layer N computes).
#pragma once

#include <string>

namespace sd::bench {

struct LlmBenchOptions {
    std::string model;
    int tokens = 512;
    int layers = 0;         // 0: every block
    bool streamed = false;  // --params-backend disk
};

// peak_gflops: the FP32 FMA peak; bf16_peak_gflops: the BF16 dot-product peak, 0 when not
// measured (compute type f32).
int run_llm_bench(const LlmBenchOptions& options, double peak_gflops, double bf16_peak_gflops);

}  // namespace sd::bench
