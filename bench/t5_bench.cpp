#include "t5_bench.h"

#include <cstdio>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "model_bench.h"
#include "models/t5_encoder.h"

namespace sd::bench {

int run_t5_bench(const T5BenchOptions& o, double peak) {
    SD_CHECK(o.tokens > 0, "--t5-tokens must be positive");
    double t0 = now_seconds();
    ModelFiles files;
    files.add(o.model, ModelRole::T5);
    const T5Encoder t5 = T5Encoder::load(Weights(files, canonical_prefix(ModelRole::T5)));
    const T5Config& c = t5.config();
    std::printf("T5 encoder %s loaded in %.2f s\n", o.model.c_str(), now_seconds() - t0);
    std::vector<int32_t> ids(static_cast<size_t>(o.tokens));
    for (size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<int32_t>((i * 7919 + 3) % static_cast<size_t>(c.vocab));
    const double n = o.tokens, inner = static_cast<double>(c.heads * c.head_dim);
    const double linears = 2.0 * n * (4.0 * c.width * inner + 3.0 * c.width * c.ffn);
    const double attention = 4.0 * c.heads * n * n * c.head_dim;
    const double flops = c.layers * (linears + attention);
    std::printf("\n%d tokens, %lld blocks, width %lld, %d threads, measured peak %.1f GFLOP/s\n",
                o.tokens, (long long)c.layers, (long long)c.width, num_threads(), peak);
    t5.forward(ids);  // warm-up: pages in, packed-weight caches
    for (int run = 0; run < 3; ++run) {
        t0 = now_seconds();
        const double c0 = cpu_seconds();
        t5.forward(ids);
        print_row("T5 encode", now_seconds() - t0, cpu_seconds() - c0, flops, peak);
    }
    std::printf("%-22s %10.1f MiB (RSS now %.1f MiB)\n", "peak RSS", peak_rss_mib(),
                current_rss_mib());
    t5.release_weights();
    std::printf("%-22s %10.1f MiB after release_weights()\n", "RSS", current_rss_mib());
    return 0;
}

}  // namespace sd::bench
