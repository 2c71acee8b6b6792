#include "model_bench.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "adapters/lora_apply.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "families/parts/unet.h"
#include "families/registry.h"
#include "ops/flop_counter.h"
#include "ops/ops.h"
#include "pipeline/decode_tiling.h"
#include "pipeline/generate.h"
#include "pipeline/latent_format.h"
#include "pipeline/taesd_codec.h"
#include "tensor/caching_allocator.h"

namespace sd::bench {

double peak_rss_mib() {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

namespace {

// Peak RSS since the last reset_peak_rss() (VmHWM), in MiB.
double phase_peak_rss_mib() {
    double kib = 0;
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, f)) {
            if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
        }
        std::fclose(f);
    }
    return kib / 1024.0;
}

// Starts a new VmHWM window (Linux: "5" to clear_refs); the whole run's peak is kept apart.
void reset_peak_rss(double* overall) {
    *overall = std::max(*overall, phase_peak_rss_mib());
    if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
        std::fputs("5", f);
        std::fclose(f);
    }
}

}  // namespace

double current_rss_mib() {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

double cpu_seconds() {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
    return sec(usage.ru_utime) + sec(usage.ru_stime);
}

void print_row(const char* what, double seconds, double cpu, double flops, double peak) {
    const double gflops = flops / seconds * 1e-9;
    const double per_thread_peak = peak / num_threads();
    std::printf("%-22s %10.3f s %10.1f GFLOP %9.1f GFLOP/s %7.1f%% of peak | cpu %8.2f s %6.1f%%\n",
                what, seconds, flops * 1e-9, gflops, 100.0 * gflops / peak, cpu,
                100.0 * flops * 1e-9 / cpu / per_thread_peak);
}

int run_model_bench(const ModelBenchOptions& o, double peak) {
    double t0 = now_seconds();
    ModelFiles files;
    if (!o.model.empty()) files.add(o.model, ModelRole::Checkpoint);
    if (!o.diffusion_model.empty()) files.add(o.diffusion_model, ModelRole::DiffusionModel);
    if (!o.clip_l.empty()) files.add(o.clip_l, ModelRole::TextEncoder);
    if (!o.clip_g.empty()) files.add(o.clip_g, ModelRole::TextEncoder2);
    if (!o.t5xxl.empty()) files.add(o.t5xxl, ModelRole::T5);
    if (!o.llm.empty()) files.add(o.llm, ModelRole::Llm);
    if (!o.vae.empty()) files.add(o.vae, ModelRole::Vae);
    const std::string& main_file = o.model.empty() ? o.diffusion_model : o.model;
    LoadOptions options;
    options.tokenizer_dir = o.tokenizer_dir;
    options.model_path = main_file;
    options.memory.residency = o.streamed ? Residency::Streamed : Residency::Resident;
    options.memory.compute = o.compute;
    options.devices.diffusion = options.devices.vae = o.backend;
    LoadedModel loaded = load_model(files, options);
    if (!o.control_net.empty())
        loaded.components.control =
            load_control_net(o.control_net, loaded.components, options.memory);
    const ModelComponents& model = loaded.components;
    std::printf("model %s (%s) loaded in %.2f s, %s weights\n", main_file.c_str(),
                model.family_name.c_str(), now_seconds() - t0,
                o.streamed ? "streamed (--params-backend disk)" : "resident");

    // The LoRA, applied for everything timed below (its own time printed by LoraSet).
    LoraSet loras;
    const WeightPatches* patches = nullptr;
    if (!o.lora.empty()) {
        patches = loras.update(files, {{o.lora, o.lora_multiplier}},
                               resolve_lora_mode(o.lora_mode, files), model.family_name);
    }
    const ScopedWeightPatches active(patches);

    // One diffusion-model pass on a constant latent, after a warm-up pass.
    ConditionRequest text;
    text.prompt = "a photo of a cat";
    text.width = o.width;
    text.height = o.height;
    Conditioning cond = model.conditioner->encode(text);
    model.conditioner->release_weights();  // as a generation does
    const LatentFormat& f = model.latent;
    SD_CHECK(o.frames == 0 || (model.video && (o.frames - 1) % 4 == 0),
             "--video-frames %d: a video model's clip has 1 + 4k frames", o.frames);
    const int64_t lh = o.height / f.factor, lw = o.width / f.factor;
    // A video's latent [1, C, T, h, w] (the video VAEs' 4x in time), an image's [1, C, h, w].
    const Shape latent = o.frames > 0 ? Shape{1, f.channels, 1 + (o.frames - 1) / 4, lh, lw}
                                      : Shape{1, f.channels, lh, lw};
    Tensor x = Tensor::full(latent, 0.1f);
    // Inpaint / Fill / Canny-Depth / image-to-video models read extra channels beside it.
    const int64_t extra = model.diffusion->in_channels() - f.channels;
    if (model.extra_input != ExtraInput::None && extra > 0) {
        Shape extra_shape = latent;
        extra_shape[1] = extra;
        x = concat({x, Tensor::zeros(extra_shape)}, 1);
    }
    Tensor t = Tensor::full({1}, model.denoiser->is_flow() ? 0.5f : 500.0f);
    ImageRequest size_only;  // the cache a generation of this size samples with
    size_only.width = o.width;
    size_only.height = o.height;
    std::optional<CacheBudget> pass_cache(std::in_place, sampling_cache_bytes(model, size_only));
    SD_LOG_INFO("sampling cache budget %.0f MiB", pass_cache->bytes() / 1048576.0);
    model.diffusion->forward(x, t, cond);
    reset_flop_counter();
    t0 = now_seconds();
    double c0 = cpu_seconds();
    model.diffusion->forward(x, t, cond);
    const double pass_s = now_seconds() - t0, pass_flops = counted_flops();
    const double pass_cpu = cpu_seconds() - c0;
    pass_cache.reset();
    CachingAllocator::instance().trim();  // the generation below starts from an empty cache
    // The ControlNet's pass on the same input, its hint encoded once (as a generation does).
    double control_s = 0, control_cpu = 0, control_flops = 0;
    image::Image hint_image{static_cast<uint32_t>(o.width), static_cast<uint32_t>(o.height), 3,
                            std::vector<uint8_t>(static_cast<size_t>(o.width) * o.height * 3)};
    for (size_t i = 0; i < hint_image.pixels.size(); ++i)
        hint_image.pixels[i] = (i / 3 / 16) % 2 ? 255 : 0;  // stripes
    if (model.control) {
        const Tensor hint = model.control->encode_hint(image_to_tensor(hint_image));
        const Tensor xc = x.narrow(1, 0, f.channels).contiguous();
        model.control->forward(xc, t, cond, hint);
        reset_flop_counter();
        t0 = now_seconds();
        c0 = cpu_seconds();
        model.control->forward(xc, t, cond, hint);
        control_s = now_seconds() - t0, control_flops = counted_flops();
        control_cpu = cpu_seconds() - c0;
    }

    // Sampling steps of a real generation (euler, CFG: two passes a step) and its decode.
    ImageRequest r;
    r.prompt = "a photo of a cat";
    r.width = o.width;
    r.height = o.height;
    r.steps = std::max(o.steps, 1);
    r.frames = o.frames;
    r.method = EULER_SAMPLE_METHOD;
    r.cfg_scale = o.cfg_scale;
    r.guidance = o.guidance;
    if (model.control) r.control_image = hint_image;
    std::vector<double> step_end;
    GenerationHooks hooks;
    hooks.progress = [&](int, int, float) { step_end.push_back(now_seconds()); };
    double overall_peak = 0;
    reset_peak_rss(&overall_peak);
    reset_flop_counter();
    t0 = now_seconds();
    c0 = cpu_seconds();
    if (o.steps > 0) generate_images(model, r, hooks);
    const double gen_cpu = cpu_seconds() - c0;
    const double generation_peak = phase_peak_rss_mib();
    const double total = now_seconds() - t0;
    const double gen_flops = counted_flops();

    // The codec's latent, as a generation hands it over (FLUX.2's 128 patch channels back
    // to 32 at twice the size, the per-channel scaling undone).
    const Tensor z = to_codec_latent(model.latent, Tensor::full(latent, 0.1f));
    const CacheBudget decode_cache(cache_bytes_for(model, /*decoding=*/true));  // as a generation
    double d0 = 0, decode_s = 0, decode_flops = 0, decode_cpu = 0, decode_peak = 0;
    if (o.decode) {
        reset_peak_rss(&overall_peak);
        reset_flop_counter();
        d0 = now_seconds();
        c0 = cpu_seconds();
        VaeTiling tiling;  // as asked, else what a generation picks (tiles when streamed)
        tiling.enabled = o.vae_tile > 0;
        tiling.tile_size = o.vae_tile;
        model.codec->decode(z,
                            decode_tiling(model, tiling, z.size(z.dim() - 2), z.size(z.dim() - 1)));
        decode_s = now_seconds() - d0, decode_flops = counted_flops();
        decode_cpu = cpu_seconds() - c0;
        decode_peak = phase_peak_rss_mib();
        model.codec->release_weights();
        CachingAllocator::instance().trim();
        overall_peak = std::max(overall_peak, decode_peak);
    }

    const double sampling_s = step_end.empty() ? total : step_end.back() - t0;
    const double step_s = (step_end.size() > 1 ? step_end.back() - step_end.front() : sampling_s) /
                          static_cast<double>(std::max<size_t>(1, step_end.size() - 1));
    const double step_flops = (gen_flops - decode_flops) / static_cast<double>(r.steps);
    std::printf("\n%dx%d%s, %d threads, measured peak %.1f GFLOP/s\n", o.width, o.height,
                o.frames > 0 ? (" x " + std::to_string(o.frames) + " frames").c_str() : "",
                num_threads(), peak);
    // The steps' CPU time: the generation's less the decode's (prompt encoding included).
    const double step_cpu = (gen_cpu - decode_cpu) / static_cast<double>(r.steps);
    print_row("diffusion model pass", pass_s, pass_cpu, pass_flops, peak);
    if (model.control) print_row("ControlNet pass", control_s, control_cpu, control_flops, peak);
    if (o.steps > 0)
        print_row(o.cfg_scale != 1.0f ? "sampling step (CFG)" : "sampling step", step_s, step_cpu,
                  step_flops, peak);
    if (o.decode) print_row("VAE decode", decode_s, decode_cpu, decode_flops, peak);
    if (!o.taesd.empty()) {
        // TAESD decodes the same latent; the first run faults its weights in, the second counts.
        const auto tae = load_taesd_codec(o.taesd, model.latent, options.memory.residency);
        tae->decode(z, {});
        reset_flop_counter();
        d0 = now_seconds();
        c0 = cpu_seconds();
        tae->decode(z, {});
        const double tae_s = now_seconds() - d0;
        print_row("TAESD decode", tae_s, cpu_seconds() - c0, counted_flops(), peak);
        if (o.decode)
            std::printf("%-22s %10.1f %% of the VAE decode's time\n", "TAESD / VAE",
                        100.0 * tae_s / decode_s);
    }
    std::printf("%-22s %10.3f s (%d steps + decode)\n", "whole generation", total, o.steps);
    for (const auto& stream : model.device_streams) {
        const gpu::StreamStats s = gpu::stream_stats(*stream);
        std::printf(
            "%-22s %10.1f MiB on %s (weights resident %.1f MiB; %lld submissions, %lld "
            "dispatches, %.1f MiB up, %.1f MiB down in all)\n",
            "device memory peak", double(s.device_bytes_peak) / (1 << 20),
            gpu::stream_device_name(*stream).c_str(), double(s.weight_bytes_resident) / (1 << 20),
            (long long)s.submissions, (long long)s.dispatches, double(s.bytes_uploaded) / (1 << 20),
            double(s.bytes_downloaded) / (1 << 20));
    }
    std::printf(
        "%-22s %10.1f MiB (whole generation %.1f MiB, VAE decode alone %.1f MiB, "
        "RSS now %.1f MiB)\n",
        "peak RSS", std::max(overall_peak, peak_rss_mib()), generation_peak, decode_peak,
        current_rss_mib());
    return 0;
}

}  // namespace sd::bench
