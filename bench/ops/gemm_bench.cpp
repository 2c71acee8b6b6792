// Dense products: linear (every weight dtype), matmul and conv2d at the shapes of the
// diffusion models. Counters: GFLOP/s = 2 M N K / time (conv: 2 OH OW O C KH KW).
//
//   sd-bench-ops --benchmark_filter='Linear|Conv|Matmul'  (Conv2dWinograd: the Winograd path)
// The thread count is the pool's (physical cores); `threads` selects it per case.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "ops/conv.h"
#include "ops/linear.h"
#include "tensor/quant.h"

namespace {

sd::Tensor random_f32(const sd::Shape& shape, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (float& x : v) x = dist(gen);
    return sd::Tensor::from_vector(shape, v);
}

// A [rows, cols] weight of `dtype` made from random values.
sd::Tensor random_weight(int64_t rows, int64_t cols, sd::DType dtype, uint32_t seed) {
    sd::Tensor f = random_f32({rows, cols}, seed);
    if (dtype == sd::DType::F32) return f;
    sd::Tensor w = sd::Tensor::empty({rows, cols}, dtype);
    const size_t rb = sd::row_bytes(dtype, cols);
    for (int64_t r = 0; r < rows; ++r) {
        sd::quantize_row(dtype, f.data<float>() + r * cols,
                         static_cast<uint8_t*>(w.data_ptr()) + r * rb, cols);
    }
    return w;
}

void set_threads(benchmark::State& state, int64_t threads) {
    sd::set_num_threads(static_cast<int>(threads));
    state.counters["threads"] = static_cast<double>(sd::num_threads());
}

void report_flops(benchmark::State& state, double flops) {
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Args: M, N, K, dtype (GGUF id), threads (0: physical cores).
void BM_Linear(benchmark::State& state) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    const auto dtype = static_cast<sd::DType>(state.range(3));
    set_threads(state, state.range(4));
    sd::Tensor x = random_f32({m, k}, 1);
    sd::Tensor w = random_weight(n, k, dtype, 2);
    sd::Tensor b = random_f32({n}, 3);
    state.SetLabel(sd::dtype_name(dtype));
    for (auto _ : state) benchmark::DoNotOptimize(sd::linear(x, w, b));
    report_flops(state, 2.0 * m * n * k);
    sd::set_num_threads(0);
}

constexpr int64_t kF32 = static_cast<int64_t>(sd::DType::F32);
constexpr int64_t kF16 = static_cast<int64_t>(sd::DType::F16);
constexpr int64_t kBF16 = static_cast<int64_t>(sd::DType::BF16);
constexpr int64_t kQ8_0 = static_cast<int64_t>(sd::DType::Q8_0);
constexpr int64_t kQ4_0 = static_cast<int64_t>(sd::DType::Q4_0);
constexpr int64_t kQ4_K = static_cast<int64_t>(sd::DType::Q4_K);
constexpr int64_t kQ6_K = static_cast<int64_t>(sd::DType::Q6_K);

BENCHMARK(BM_Linear)
    ->ArgNames({"M", "N", "K", "dtype", "threads"})
    ->Args({4096, 1280, 1280, kF32, 0})
    ->Args({4096, 1280, 1280, kF16, 0})
    ->Args({4096, 1280, 1280, kBF16, 0})
    ->Args({4096, 1280, 1280, kQ8_0, 0})
    ->Args({4096, 1280, 1280, kQ4_0, 0})
    ->Args({4096, 1280, 1280, kQ4_K, 0})
    ->Args({4096, 1280, 1280, kQ6_K, 0})
    ->Args({4096, 1280, 1280, kF32, 1})
    ->Args({4096, 1280, 1280, kF16, 1})
    ->Args({77, 768, 768, kF32, 0})
    ->Args({77, 768, 768, kF16, 0})
    ->Args({77, 3072, 768, kF16, 0})
    ->Args({1, 1280, 320, kF16, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: batch, M, N, K: [batch, M, K] x [batch, K, N].
void BM_Matmul(benchmark::State& state) {
    const int64_t batch = state.range(0), m = state.range(1), n = state.range(2),
                  k = state.range(3);
    sd::Tensor a = random_f32({batch, m, k}, 1);
    sd::Tensor b = random_f32({batch, k, n}, 2);
    for (auto _ : state) benchmark::DoNotOptimize(sd::matmul(a, b));
    report_flops(state, 2.0 * batch * m * n * k);
}

BENCHMARK(BM_Matmul)
    ->ArgNames({"batch", "M", "N", "K"})
    ->Args({1, 4096, 1280, 1280})
    ->Args({8, 4096, 40, 4096})
    ->Args({8, 4096, 4096, 40})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: batch, C, O, H (= W), kernel, stride, dtype, threads.
void BM_Conv2d(benchmark::State& state) {
    const int64_t batch = state.range(0), c = state.range(1), o = state.range(2),
                  h = state.range(3), kk = state.range(4);
    const int stride = static_cast<int>(state.range(5));
    const auto dtype = static_cast<sd::DType>(state.range(6));
    set_threads(state, state.range(7));
    sd::Tensor x = random_f32({batch, c, h, h}, 1);
    sd::Tensor w = random_weight(o, c * kk * kk, dtype, 2).view({o, c, kk, kk});
    sd::Tensor b = random_f32({o}, 3);
    sd::Conv2dOptions opt;
    opt.stride_h = opt.stride_w = stride;
    opt.pad_h = opt.pad_w = static_cast<int>(kk / 2);
    const int64_t oh = (h + 2 * opt.pad_h - kk) / stride + 1;
    state.SetLabel(sd::dtype_name(dtype));
    for (auto _ : state) benchmark::DoNotOptimize(sd::conv2d(x, w, b, opt));
    report_flops(state, 2.0 * batch * oh * oh * o * c * kk * kk);
    sd::set_num_threads(0);
}

BENCHMARK(BM_Conv2d)
    ->ArgNames({"B", "C", "O", "H", "k", "s", "dtype", "threads"})
    ->Args({1, 320, 320, 64, 3, 1, kF32, 0})
    ->Args({1, 320, 320, 64, 3, 1, kF16, 0})
    ->Args({1, 320, 320, 64, 3, 1, kF32, 1})
    ->Args({1, 640, 640, 32, 3, 1, kF16, 0})
    ->Args({1, 1280, 1280, 16, 3, 1, kF16, 0})
    ->Args({1, 320, 320, 64, 3, 2, kF16, 0})
    ->Args({1, 640, 320, 64, 1, 1, kF16, 0})
    ->Args({1, 4, 320, 64, 3, 1, kF16, 0})
    ->Args({1, 64, 64, 256, 3, 1, kF32, 0})  // TAESD's convs (decoder at 512x512: 256, 512)
    ->Args({1, 64, 64, 512, 3, 1, kF32, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// conv2d's Winograd path (Conv2dOptions::winograd) at the AutoencoderKL's and TAESD's 3x3
// shapes; GFLOP/s of the direct form (2 OH OW O C 9), so the rows compare with BM_Conv2d's.
// Args: C (= O), H (= W), threads (0: physical cores).
void BM_Conv2dWinograd(benchmark::State& state) {
    const int64_t c = state.range(0), h = state.range(1);
    set_threads(state, state.range(2));
    sd::Tensor x = random_f32({1, c, h, h}, 1);
    sd::Tensor w = random_f32({c, c, 3, 3}, 2);
    sd::Tensor b = random_f32({c}, 3);
    sd::Conv2dOptions opt;
    opt.pad_h = opt.pad_w = 1;
    opt.winograd = true;
    for (auto _ : state) benchmark::DoNotOptimize(sd::conv2d(x, w, b, opt));
    report_flops(state, 2.0 * h * h * c * c * 9);
    sd::set_num_threads(0);
}

BENCHMARK(BM_Conv2dWinograd)
    ->ArgNames({"C", "H", "threads"})
    ->Args({512, 32, 0})
    ->Args({512, 64, 0})
    ->Args({256, 128, 0})
    ->Args({128, 256, 0})
    ->Args({64, 256, 0})
    ->Args({512, 64, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
