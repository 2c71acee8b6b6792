#include "llm_bench.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "model_bench.h"
#include "models/llm.h"

namespace sd::bench {
namespace {

// The FLOPs of a prefill of n tokens through `layers` blocks.
double prefill_flops(const LlmConfig& c, double n, int64_t layers) {
    const double q = static_cast<double>(c.heads * c.head_dim);
    const double kv = static_cast<double>(c.kv_heads * c.head_dim);
    const double w = static_cast<double>(c.width);
    const double linears = 2.0 * n * (2.0 * w * q + 2.0 * w * kv + 3.0 * w * c.ffn);
    const double attention = 2.0 * c.heads * n * (n + 1) * c.head_dim;  // causal: half of 4 n^2 d
    return static_cast<double>(layers) * (linears + attention);
}

// The attention of one block alone (f32 [1, n, heads, d] inputs): grouped-query as views
// (the model's way) against keys and values first copied out to every query head.
void time_attention(const LlmConfig& c, int64_t n, double peak) {
    const int64_t h = c.heads, kv = c.kv_heads, d = c.head_dim, g = h / kv;
    auto random = [](const Shape& shape) {
        Tensor t = Tensor::empty(shape);
        float* p = t.data<float>();
        for (int64_t i = 0; i < t.numel(); ++i)
            p[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
        return t;
    };
    const Tensor q = random({1, n, h, d}), k = random({1, n, kv, d}), v = random({1, n, kv, d});
    auto copied = [&](const Tensor& t) {
        return t.view({1, n, kv, 1, d}).expand({1, n, kv, g, d}).contiguous().view({1, n, h, d});
    };
    const double flops = 2.0 * h * n * (n + 1) * d;
    for (int variant = 0; variant < 2; ++variant) {
        double best = 1e30;
        for (int run = 0; run < 5; ++run) {
            const double t0 = now_seconds();
            if (variant == 0)
                grouped_query_attention(q, k, v, {});
            else
                grouped_query_attention(q, copied(k), copied(v), {});
            best = std::min(best, now_seconds() - t0);
        }
        std::printf("%-34s %8.2f ms %9.1f GFLOP/s %7.1f%% of the FP32 peak\n",
                    variant == 0 ? "attention, one block, GQA as views"
                                 : "attention, one block, k/v copied",
                    best * 1e3, flops / best * 1e-9, 100.0 * flops / best * 1e-9 / peak);
    }
}

}  // namespace

int run_llm_bench(const LlmBenchOptions& o, double peak, double bf16_peak) {
    SD_CHECK(o.tokens > 0, "--llm-tokens must be positive");
    double t0 = now_seconds();
    ModelFiles files;
    files.add(o.model, ModelRole::Llm);
    const Residency residency = o.streamed ? Residency::Streamed : Residency::Resident;
    const Llm llm =
        Llm::load(Weights(files, canonical_prefix(ModelRole::Llm), residency), llm_options(files));
    const LlmConfig& c = llm.config();
    std::printf("LLM %s loaded in %.2f s, peak RSS %.1f MiB\n", o.model.c_str(), now_seconds() - t0,
                peak_rss_mib());
    SD_CHECK(o.layers >= 0 && o.layers <= c.layers, "--llm-layers %d: the file has %lld blocks",
             o.layers, static_cast<long long>(c.layers));
    const int64_t layers = o.layers > 0 ? o.layers : c.layers;
    // Layer N's hidden state: the forward runs blocks 0..N-1 (N = all: the final-normed output).
    const std::vector<int> out_layers = {static_cast<int>(o.layers > 0 ? o.layers : c.layers + 1)};
    std::vector<int32_t> ids(static_cast<size_t>(o.tokens));
    for (size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<int32_t>((i * 7919 + 3) % static_cast<size_t>(c.vocab));
    const double flops = prefill_flops(c, o.tokens, layers);
    // The weights' dtype decides the products (bf16 ones for bf16 weights, compute type auto).
    const bool bf16 = llm.weight_dtype() == DType::BF16 && bf16_peak > 0;
    const double used_peak = bf16 ? bf16_peak : peak;
    std::printf(
        "\n%d tokens, %lld of %lld blocks, width %lld, %lld/%lld heads x %lld, ffn %lld, "
        "weights %s, %d threads, %s\nmeasured peak used: %.1f GFLOP/s (%s)\n",
        o.tokens, (long long)layers, (long long)c.layers, (long long)c.width, (long long)c.heads,
        (long long)c.kv_heads, (long long)c.head_dim, (long long)c.ffn,
        dtype_name(llm.weight_dtype()), num_threads(), o.streamed ? "streamed" : "resident",
        used_peak, bf16 ? "BF16 dot products" : "FP32 FMA");
    llm.forward(ids, out_layers);  // warm-up: pages in, packed-weight caches
    std::printf("%-22s %10.1f MiB after the first prefill\n", "peak RSS", peak_rss_mib());
    for (int run = 0; run < 3; ++run) {
        t0 = now_seconds();
        const double c0 = cpu_seconds();
        llm.forward(ids, out_layers);
        print_row("LLM prefill", now_seconds() - t0, cpu_seconds() - c0, flops, used_peak);
    }
    time_attention(c, o.tokens, peak);
    std::printf("%-22s %10.1f MiB (RSS now %.1f MiB)\n", "peak RSS", peak_rss_mib(),
                current_rss_mib());
    llm.release_weights();
    std::printf("%-22s %10.1f MiB after release_weights()\n", "RSS", current_rss_mib());
    return 0;
}

}  // namespace sd::bench
