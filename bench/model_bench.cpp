#include "model_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "ops/flop_counter.h"
#include "ops/ops.h"
#include "pipeline/sd_pipeline.h"

namespace sd::bench {
namespace {

double peak_rss_mib() {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void print_row(const char* what, double seconds, double flops, double peak) {
    double gflops = flops / seconds * 1e-9;
    std::printf("%-22s %10.3f s %10.1f GFLOP %9.1f GFLOP/s %7.1f%% of peak\n", what, seconds,
                flops * 1e-9, gflops, 100.0 * gflops / peak);
}

}  // namespace

int run_model_bench(const ModelBenchOptions& o, double peak) {
    double t0 = now_seconds();
    ModelFiles files;
    files.add(o.model, ModelRole::Checkpoint);
    PipelineOptions options;
    options.tokenizer_dir = o.tokenizer_dir;
    options.model_path = o.model;
    SdModels models = SdModels::load(files, options);
    std::printf("model %s (%s) loaded in %.2f s\n", o.model.c_str(), models.family.name,
                now_seconds() - t0);

    // One UNet pass on a random latent, after a warm-up pass.
    Tensor context = models.conditioner->encode("a photo of a cat", -1);
    Tensor x = Tensor::full({1, 4, o.height / 8, o.width / 8}, 0.1f);
    Tensor t = Tensor::full({1}, 500.0f);
    models.unet.forward(x, t, context);
    reset_flop_counter();
    t0 = now_seconds();
    models.unet.forward(x, t, context);
    const double pass_s = now_seconds() - t0, pass_flops = counted_flops();

    // Sampling steps of a real generation (euler, CFG: two passes a step) and its decode.
    ImageRequest r;
    r.prompt = "a photo of a cat";
    r.width = o.width;
    r.height = o.height;
    r.steps = o.steps;
    r.method = EULER_SAMPLE_METHOD;
    std::vector<double> step_end;
    GenerationHooks hooks;
    hooks.progress = [&](int, int, float) { step_end.push_back(now_seconds()); };
    reset_flop_counter();
    t0 = now_seconds();
    generate_images(models, r, hooks);
    const double total = now_seconds() - t0;
    const double gen_flops = counted_flops();

    Tensor z = Tensor::full({1, 4, o.height / 8, o.width / 8}, 0.1f);
    reset_flop_counter();
    double d0 = now_seconds();
    models.vae.decode(z);
    const double decode_s = now_seconds() - d0, decode_flops = counted_flops();

    const double sampling_s = step_end.empty() ? total : step_end.back() - t0;
    const double step_s = (step_end.size() > 1 ? step_end.back() - step_end.front() : sampling_s) /
                          static_cast<double>(std::max<size_t>(1, step_end.size() - 1));
    const double step_flops = (gen_flops - decode_flops) / static_cast<double>(o.steps);
    std::printf("\n%dx%d, %d threads, measured peak %.1f GFLOP/s\n", o.width, o.height,
                num_threads(), peak);
    print_row("UNet pass", pass_s, pass_flops, peak);
    print_row("sampling step (CFG)", step_s, step_flops, peak);
    print_row("VAE decode", decode_s, decode_flops, peak);
    std::printf("%-22s %10.3f s (%d steps + decode)\n", "whole generation", total, o.steps);
    std::printf("%-22s %10.1f MiB\n", "peak RSS", peak_rss_mib());
    return 0;
}

}  // namespace sd::bench
