// The machine's FP32 peak: independent FMA chains held in registers, no memory traffic,
// run on every thread of the pool at once.
#pragma once

#include "base/cpu_features.h"

namespace sd::bench {

// GFLOP/s (an FMA counts 2) of `isa`'s widest FMA, all pool threads, about `seconds` long.
double measure_peak_gflops(Isa isa, double seconds);
// The same for AVX512-BF16 dot products (each bf16 product and its add count 2); 0 where
// the CPU or the build has none.
double measure_bf16_peak_gflops(double seconds);

// Per-ISA loops: run `iterations` rounds and return the FLOPs done.
double fma_loop_avx512(long iterations);
double fma_loop_avx2(long iterations);
double dpbf16_loop_avx512(long iterations);  // peak_flops_avx512_bf16.cpp

}  // namespace sd::bench
