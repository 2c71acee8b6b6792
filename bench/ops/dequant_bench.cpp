// Dequantization throughput per dtype and ISA (single thread): rows of 4096 values, as GEMM
// weight packing calls it. Reports bytes of f32 written per second (items = values) and the
// quantized bytes read. Quantization (convert time only) is measured once per type, scalar.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

namespace {

constexpr int64_t kRow = 4096;
constexpr int64_t kRows = 64;  // 256 Ki values: 1 MiB of f32, stays in L2 / L3

std::vector<uint8_t> quantized_rows(sd::DType type) {
    std::mt19937 gen(42);
    std::normal_distribution<float> dist(0.f, 1.f);
    std::vector<float> x(static_cast<size_t>(kRow * kRows));
    for (float& v : x) v = dist(gen);
    const size_t rb = sd::row_bytes(type, kRow);
    std::vector<uint8_t> q(rb * kRows);
    for (int64_t r = 0; r < kRows; ++r) {
        sd::quantize_row(type, x.data() + r * kRow, q.data() + r * rb, kRow);
    }
    return q;
}

void BM_Dequantize(benchmark::State& state) {
    const auto type = static_cast<sd::DType>(state.range(0));
    const auto isa = static_cast<sd::Isa>(state.range(1));
    if (isa > sd::best_supported_isa()) {
        state.SkipWithError("ISA not supported here");
        return;
    }
    const sd::Isa saved = sd::active_isa();
    sd::set_isa(isa);
    std::vector<uint8_t> q = quantized_rows(type);
    std::vector<float> y(static_cast<size_t>(kRow * kRows));
    const size_t rb = sd::row_bytes(type, kRow);
    for (auto _ : state) {
        for (int64_t r = 0; r < kRows; ++r) {
            sd::dequantize_row(type, q.data() + r * rb, y.data() + r * kRow, kRow);
        }
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    sd::set_isa(saved);
    state.SetItemsProcessed(state.iterations() * kRow * kRows);
    state.SetBytesProcessed(state.iterations() * kRow * kRows *
                            static_cast<int64_t>(sizeof(float)));
    state.SetLabel(std::string(sd::dtype_name(type)) + " " + sd::isa_name(isa));
}

void BM_Quantize(benchmark::State& state) {
    const auto type = static_cast<sd::DType>(state.range(0));
    std::vector<float> x(kRow);
    std::mt19937 gen(7);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (float& v : x) v = dist(gen);
    std::vector<uint8_t> q(sd::row_bytes(type, kRow));
    for (auto _ : state) {
        sd::quantize_row(type, x.data(), q.data(), kRow);
        benchmark::DoNotOptimize(q.data());
    }
    state.SetItemsProcessed(state.iterations() * kRow);
    state.SetLabel(sd::dtype_name(type));
}

void dequant_args(benchmark::internal::Benchmark* b) {
    for (sd::DType t :
         {sd::DType::F16, sd::DType::BF16, sd::DType::Q8_0, sd::DType::Q4_0, sd::DType::Q4_1,
          sd::DType::Q5_0, sd::DType::Q5_1, sd::DType::IQ4_NL, sd::DType::Q2_K, sd::DType::Q3_K,
          sd::DType::Q4_K, sd::DType::Q5_K, sd::DType::Q6_K, sd::DType::IQ4_XS}) {
        for (int isa = 0; isa <= 2; ++isa) b->Args({static_cast<int64_t>(t), isa});
    }
}

void quant_args(benchmark::internal::Benchmark* b) {
    for (sd::DType t : {sd::DType::F16, sd::DType::Q8_0, sd::DType::Q4_0, sd::DType::Q4_K,
                        sd::DType::Q6_K, sd::DType::IQ4_XS}) {
        b->Arg(static_cast<int64_t>(t));
    }
}

}  // namespace

BENCHMARK(BM_Dequantize)->Apply(dequant_args);
BENCHMARK(BM_Quantize)->Apply(quant_args);
