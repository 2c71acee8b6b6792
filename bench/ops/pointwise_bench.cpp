// Google Benchmark cases for the memory-bound ops: group norm, layer norm, activations,
// softmax, elementwise arithmetic, shape copies. "bytes_per_second" counts each input read
// once and each output written once (the compulsory traffic), so it reads directly against
// the machine's memory bandwidth. Threads: the pool's size (physical cores by default).
// The last argument of each case is the ISA (0 generic, 1 avx2, 2 avx512, -1 the best).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "ops/activation.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/shape_ops.h"
#include "tensor/tensor.h"

namespace {

sd::Tensor bench_tensor(const sd::Shape& shape, uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
    sd::Tensor t = sd::Tensor::empty(shape);
    float* p = t.data<float>();
    uint32_t x = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < t.numel(); ++i) {
        x = x * 1664525u + 1013904223u;
        p[i] = lo + (hi - lo) * static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
    }
    return t;
}

// Runs fn per iteration under the ISA of the last argument; bytes = compulsory traffic.
void run(benchmark::State& state, int isa, double bytes, const std::function<sd::Tensor()>& fn) {
    const sd::Isa saved = sd::active_isa();
    if (isa >= 0) sd::set_isa(static_cast<sd::Isa>(isa));
    state.SetLabel(sd::isa_name(sd::active_isa()));
    for (auto _ : state) {
        sd::Tensor out = fn();
        benchmark::DoNotOptimize(out.data_ptr());
    }
    state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(state.iterations())));
    sd::set_isa(saved);
}

int isa_arg(const benchmark::State& state, int i) {
    return static_cast<int>(state.range(i));
}

// Real time (the pool's threads do the work), microseconds, and the fastest repetition next
// to the mean: on a shared machine the minimum is the figure to compare.
void common(benchmark::internal::Benchmark* b) {
    b->UseRealTime()
        ->Unit(benchmark::kMicrosecond)
        ->ComputeStatistics("min", [](const std::vector<double>& v) {
            return *std::min_element(v.begin(), v.end());
        });
}

// The bandwidth baseline: a parallel memcpy of [2, 320, 64, 64] f32 into a buffer that
// already exists (read + write bytes).
void BM_Memcpy(benchmark::State& state) {
    sd::Tensor x = bench_tensor({2, 320, 64, 64}, 99);
    sd::Tensor y = sd::Tensor::empty(x.shape());
    const auto* src = x.data<float>();
    float* dst = y.data<float>();
    for (auto _ : state) {
        sd::parallel_for(x.numel(), 32768, [&](int64_t b, int64_t e) {
            std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
        });
        benchmark::DoNotOptimize(dst);
    }
    state.SetBytesProcessed(static_cast<int64_t>(8.0 * static_cast<double>(x.numel()) *
                                                 static_cast<double>(state.iterations())));
}
BENCHMARK(BM_Memcpy)->Apply(common);

// args: C, H (= W), groups, silu, isa. [1, C, H, H].
void BM_GroupNorm(benchmark::State& state) {
    const int64_t c = state.range(0), h = state.range(1);
    sd::Tensor x = bench_tensor({1, c, h, h}, 1);
    sd::Tensor w = bench_tensor({c}, 2, 0.5f, 1.5f), b = bench_tensor({c}, 3);
    const int64_t groups = state.range(2);
    const bool silu = state.range(3) != 0;
    run(state, isa_arg(state, 4), 8.0 * static_cast<double>(x.numel()),
        [&] { return sd::group_norm(x, groups, w, b, 1e-5f, silu); });
}
BENCHMARK(BM_GroupNorm)
    ->ArgNames({"C", "HW", "groups", "silu", "isa"})
    ->Args({320, 64, 32, 0, -1})
    ->Args({320, 64, 32, 1, -1})
    ->Args({320, 64, 32, 1, 0})
    ->Args({320, 64, 32, 1, 1})
    ->Args({1280, 16, 32, 1, -1})
    ->Args({512, 256, 32, 1, -1})  // the VAE decoder's largest group norm
    ->Apply(common);

// args: rows, N, isa. [rows, N] normalised over N.
void BM_LayerNorm(benchmark::State& state) {
    sd::Tensor x = bench_tensor({state.range(0), state.range(1)}, 4);
    sd::Tensor w = bench_tensor({state.range(1)}, 5), b = bench_tensor({state.range(1)}, 6);
    run(state, isa_arg(state, 2), 8.0 * static_cast<double>(x.numel()),
        [&] { return sd::layer_norm(x, w, b); });
}
BENCHMARK(BM_LayerNorm)->Args({8192, 320, -1})->Args({154, 768, -1})->Apply(common);

// args: kind (0 gelu, 1 gelu tanh, 2 silu, 3 sigmoid, 4 tanh), n, isa.
void BM_Activation(benchmark::State& state) {
    sd::Tensor x = bench_tensor({state.range(1)}, 7, -6.0f, 6.0f);
    const int64_t kind = state.range(0);
    run(state, isa_arg(state, 2), 8.0 * static_cast<double>(x.numel()), [&] {
        switch (kind) {
            case 0:
                return sd::gelu(x);
            case 1:
                return sd::gelu(x, sd::GeluApprox::Tanh);
            case 2:
                return sd::silu(x);
            case 3:
                return sd::sigmoid(x);
            default:
                return sd::tanh(x);
        }
    });
}
BENCHMARK(BM_Activation)
    ->ArgNames({"kind", "n", "isa"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1 << 23}, {-1}})
    ->Args({0, 1 << 23, 0})
    ->Args({0, 1 << 23, 1})
    ->Args({2, 1 << 23, 0})
    ->Args({2, 1 << 23, 1})
    ->Args({0, 1 << 16, -1})  // L2-resident: compute throughput
    ->Apply(common);

// SD1.x GEGLU at 64x64: [2, 4096, 2 * 1280] -> [2, 4096, 1280].
void BM_Geglu(benchmark::State& state) {
    sd::Tensor x = bench_tensor({2, 4096, 2560}, 8);
    run(state, isa_arg(state, 0), 12.0 * 2 * 4096 * 1280, [&] { return sd::geglu(x); });
}
BENCHMARK(BM_Geglu)->Arg(-1)->Arg(0)->Apply(common);

// args: rows, N, isa. Softmax over rows of N.
void BM_Softmax(benchmark::State& state) {
    sd::Tensor x = bench_tensor({state.range(0), state.range(1)}, 9, -8.0f, 8.0f);
    run(state, isa_arg(state, 2), 8.0 * static_cast<double>(x.numel()),
        [&] { return sd::softmax(x); });
}
BENCHMARK(BM_Softmax)
    ->Args({4096, 4096, -1})
    ->Args({4096, 4096, 0})
    ->Args({32768, 77, -1})
    ->Apply(common);

// args: pattern (0 same shape, 1 per-channel [C,1,1], 2 per-row [W], 3 scalar), isa.
// a: [2, 320, 64, 64].
void BM_Add(benchmark::State& state) {
    sd::Tensor a = bench_tensor({2, 320, 64, 64}, 10);
    const int64_t pattern = state.range(0);
    sd::Tensor b = pattern == 0   ? bench_tensor({2, 320, 64, 64}, 11)
                   : pattern == 1 ? bench_tensor({320, 1, 1}, 12)
                   : pattern == 2 ? bench_tensor({64}, 13)
                                  : bench_tensor({}, 14);
    const double bytes = 4.0 * static_cast<double>(2 * a.numel() + b.numel());
    run(state, isa_arg(state, 1), bytes, [&] { return sd::add(a, b); });
}
BENCHMARK(BM_Add)
    ->ArgNames({"pattern", "isa"})
    ->ArgsProduct({{0, 1, 2, 3}, {-1}})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Apply(common);

void BM_Mul_Strided(benchmark::State& state) {
    sd::Tensor a = bench_tensor({2, 64, 64, 320}, 15).permute({0, 3, 1, 2});
    sd::Tensor b = bench_tensor({2, 320, 64, 64}, 16);
    run(state, -1, 12.0 * static_cast<double>(b.numel()), [&] { return sd::mul(a, b); });
}
BENCHMARK(BM_Mul_Strided)->Apply(common);

// The UNet's layout changes and copies at 64x64.
void BM_PermuteToTokens(benchmark::State& state) {
    sd::Tensor x = bench_tensor({2, 320, 4096}, 17);
    run(state, -1, 8.0 * static_cast<double>(x.numel()), [&] {
        return sd::permute_copy(x, {0, 2, 1});
    });
}
BENCHMARK(BM_PermuteToTokens)->Apply(common);

void BM_ConcatSkip(benchmark::State& state) {
    sd::Tensor h = bench_tensor({2, 640, 32, 32}, 18), s = bench_tensor({2, 320, 32, 32}, 19);
    run(state, -1, 8.0 * static_cast<double>(h.numel() + s.numel()), [&] {
        return sd::concat({h, s}, 1);
    });
}
BENCHMARK(BM_ConcatSkip)->Apply(common);

void BM_Upsample(benchmark::State& state) {
    sd::Tensor x = bench_tensor({2, 1280, 32, 32}, 20);
    run(state, -1, 20.0 * static_cast<double>(x.numel()),
        [&] { return sd::upsample_nearest2x(x); });
}
BENCHMARK(BM_Upsample)->Apply(common);

void BM_Pad(benchmark::State& state) {
    sd::Tensor x = bench_tensor({1, 512, 128, 128}, 21);
    run(state, -1, 8.0 * static_cast<double>(x.numel()), [&] { return sd::pad2d(x, 0, 1, 0, 1); });
}
BENCHMARK(BM_Pad)->Apply(common);

}  // namespace
