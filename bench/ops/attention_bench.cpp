// Google Benchmark cases for sd::scaled_dot_product_attention. FLOPs are counted as
// 4 * B * H * Lq * Lk * D (Q.K^T and P.V; D == Dv here), halved for causal attention with
// Lq == Lk; the "GFLOP/s" counter is that over the wall time. Threads: the pool's size
// (physical cores unless SD_NUM_THREADS / set_num_threads says otherwise).
#include <benchmark/benchmark.h>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "ops/attention.h"
#include "tensor/tensor.h"

namespace {

sd::Tensor bench_tensor(const sd::Shape& shape, float seed) {
    sd::Tensor t = sd::Tensor::empty(shape);
    float* p = t.data<float>();
    uint32_t x = static_cast<uint32_t>(seed * 1000.0f) + 12345u;
    for (int64_t i = 0; i < t.numel(); ++i) {
        x = x * 1664525u + 1013904223u;
        p[i] = static_cast<float>(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return t;
}

// args: B, H, Lq, Lk, D, causal, isa (-1: the best one), threads (0: the pool's default)
void BM_Attention(benchmark::State& state) {
    const int64_t B = state.range(0), H = state.range(1), Lq = state.range(2), Lk = state.range(3),
                  D = state.range(4);
    const bool causal = state.range(5) != 0;
    const int isa = static_cast<int>(state.range(6));
    const int threads = static_cast<int>(state.range(7));
    const sd::Isa saved = sd::active_isa();
    const int saved_threads = sd::num_threads();
    if (isa >= 0) sd::set_isa(static_cast<sd::Isa>(isa));
    if (threads > 0) sd::set_num_threads(threads);
    state.SetLabel(sd::isa_name(sd::active_isa()));
    sd::Tensor q = bench_tensor({B, H, Lq, D}, 1);
    sd::Tensor k = bench_tensor({B, H, Lk, D}, 2);
    sd::Tensor v = bench_tensor({B, H, Lk, D}, 3);
    sd::AttentionOptions opt;
    opt.causal = causal;
    for (auto _ : state) {
        sd::Tensor out = sd::scaled_dot_product_attention(q, k, v, {}, opt);
        benchmark::DoNotOptimize(out.data_ptr());
    }
    double flops = 4.0 * B * H * Lq * Lk * D;
    if (causal && Lq == Lk) flops *= 0.5;
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    sd::set_isa(saved);
    sd::set_num_threads(saved_threads);
}

// SD1.x self-attention at 512x512 (64x64 latents): 4096 x 4096, 8 heads of 40; also on one
// thread and with the AVX2 kernel.
BENCHMARK(BM_Attention)
    ->ArgNames({"B", "H", "Lq", "Lk", "D", "causal", "isa", "threads"})
    ->Args({1, 8, 4096, 4096, 40, 0, -1, 0})
    ->Args({1, 8, 4096, 4096, 40, 0, -1, 1})
    ->Args({1, 8, 4096, 4096, 40, 0, 1, 0})
    // SD1.x cross-attention: 4096 queries x 77 text tokens.
    ->Args({1, 8, 4096, 77, 40, 0, -1, 0})
    // CLIP text encoder: 77 x 77, 12 heads of 64, causal.
    ->Args({1, 12, 77, 77, 64, 1, -1, 0})
    // Other head dims of SD: 1024 x 1024 with 80 (SD1.x level 2) and 64 (SD2.x / XL),
    // 256 x 256 with 160 (SD1.x level 3), 128 and 96 (DiTs).
    ->Args({1, 8, 1024, 1024, 80, 0, -1, 0})
    ->Args({1, 10, 1024, 1024, 64, 0, -1, 0})
    ->Args({1, 8, 256, 256, 160, 0, -1, 0})
    ->Args({1, 8, 1024, 1024, 128, 0, -1, 0})
    ->Args({1, 8, 1024, 1024, 96, 0, -1, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
