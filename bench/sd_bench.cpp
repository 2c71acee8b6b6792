// sd-bench: the engine's headline kernel figures next to the machine's measured FP32 peak.
//
//   sd-bench [-t THREADS] [--min-time SECONDS] [--isa generic|avx2|avx512]
//            [--compute-type auto|f32|bf16]
//
// Each case is run once to warm up, then repeated for at least --min-time seconds; the
// table shows the median time. FLOPs: linear/matmul 2*M*N*K; conv2d 2*OH*OW*O*C*KH*KW;
// attention 4*B*H*Lq*Lk*D (Q.K^T and P.V; softmax not counted); group norm 8 per element
// (mean, variance, normalise, affine), with its memory throughput shown as well.
// With --compute-type bf16 the table adds "bf16-compute" rows (the same linear and conv2d
// in bf16 mode, their % against the measured bf16 dot-product peak); with auto (the
// default, where the CPU has AVX512-BF16) a "linear bf16-auto" row: a bf16 weight's linear. --model
// runs in the compute type given (auto by default: bf16 products for the weights stored in bf16).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/cpu_features.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "llm_bench.h"
#include "model_bench.h"
#include "ops/compute_type.h"
#include "ops/ops.h"
#include "peak_flops.h"
#include "t5_bench.h"
#include "tensor/caching_allocator.h"
#include "upscale_bench.h"

namespace sd::bench {
namespace {

struct Case {
    std::string name;
    std::string shape;
    double flops;
    double bytes;  // memory moved at least once, for memory-bound ops (0: not shown)
    std::function<void()> run;
    ComputeType compute = ComputeType::F32;
};

double median_seconds(const std::function<void()>& fn, double min_time) {
    fn();  // warm-up: first-touch of buffers, packed-weight caches
    std::vector<double> times;
    double start = now_seconds();
    do {
        double t0 = now_seconds();
        fn();
        times.push_back(now_seconds() - t0);
    } while (now_seconds() - start < min_time || times.size() < 3);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

Tensor random_f32(const Shape& shape, uint32_t seed) {
    Tensor t = Tensor::empty(shape);
    float* p = t.data<float>();
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < t.numel(); ++i) {
        s = s * 1664525u + 1013904223u;
        p[i] = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return t;
}

Case linear_case(int64_t m, int64_t n, int64_t k, DType wtype) {
    Tensor x = random_f32({m, k}, 1);
    Tensor w = convert(scale(random_f32({n, k}, 2), 0.05f), wtype);
    Tensor b = random_f32({n}, 3);
    return {std::string("linear ") + dtype_name(wtype),
            strfmt("M=%lld N=%lld K=%lld", (long long)m, (long long)n, (long long)k),
            2.0 * m * n * k, 0, [=] { linear(x, w, b); }};
}

// A 3x3 convolution, padding 1: the UNet's 320 -> 320 at 64x64 by default; ESRGAN's dense
// blocks run 64 -> 32 up to 192 -> 64 at the tile size (128x128); TAESD's decoder 64 -> 64
// at 64x64 .. 512x512.
Case conv3x3_case(int64_t in = 320, int64_t out = 320, int64_t hw = 64,
                  const char* name = "conv2d 3x3 f16", bool winograd = false) {
    Tensor x = random_f32({1, in, hw, hw}, 4);
    Tensor w = convert(scale(random_f32({out, in, 3, 3}, 5), 0.02f), DType::F16);
    Tensor b = random_f32({out}, 6);
    Conv2dOptions o;
    o.pad_h = o.pad_w = 1;
    o.winograd = winograd;  // GFLOP/s counted as direct summation's (effective)
    return {name,
            strfmt("%lld->%lld, %lldx%lld", (long long)in, (long long)out, (long long)hw,
                   (long long)hw),
            2.0 * hw * hw * out * in * 9, 0, [=] { conv2d(x, w, b, o); }};
}

// A case run in bf16 (or auto) mode.
Case bf16_compute(Case c, const char* name, ComputeType type = ComputeType::BF16) {
    c.shape = c.name.substr(c.name.rfind(' ') + 1) + " w, " + c.shape;
    c.name = name;
    c.compute = type;
    return c;
}

// bf16: the bf16-compute rows (--compute-type bf16); auto: the row of a bf16 weight under
// the default compute type (bf16 products where the CPU has them).
std::vector<Case> make_cases(bool bf16, bool autotype) {
    std::vector<Case> cases;
    for (DType t : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K}) {
        cases.push_back(linear_case(4096, 1280, 1280, t));
    }
    if (autotype) {
        cases.push_back(bf16_compute(linear_case(4096, 1280, 1280, DType::BF16), "linear bf16-auto",
                                     ComputeType::Auto));
    }
    if (bf16) {
        cases.push_back(
            bf16_compute(linear_case(4096, 1280, 1280, DType::F16), "linear bf16-compute"));
    }
    cases.push_back(linear_case(77, 768, 768, DType::F16));
    cases.push_back(conv3x3_case());
    cases.push_back(conv3x3_case(64, 32, 128, "conv2d RRDB first"));
    cases.push_back(conv3x3_case(192, 64, 128, "conv2d RRDB last"));
    cases.push_back(conv3x3_case(64, 64, 256, "conv2d TAESD"));
    cases.push_back(conv3x3_case(64, 64, 512, "conv2d TAESD"));
    cases.push_back(conv3x3_case(64, 64, 256, "conv2d TAESD winograd", true));
    cases.push_back(conv3x3_case(64, 64, 512, "conv2d TAESD winograd", true));
    if (bf16) cases.push_back(bf16_compute(conv3x3_case(), "conv2d bf16-compute"));
    {
        Tensor q = random_f32({1, 8, 4096, 40}, 7);
        Tensor k = random_f32({1, 8, 4096, 40}, 8);
        Tensor v = random_f32({1, 8, 4096, 40}, 9);
        cases.push_back({"attention", "4096x4096, 8 heads x 40", 4.0 * 8 * 4096 * 4096 * 40, 0,
                         [=] { scaled_dot_product_attention(q, k, v); }});
    }
    {
        Tensor x = random_f32({1, 320, 64, 64}, 10);
        Tensor w = random_f32({320}, 11);
        Tensor b = random_f32({320}, 12);
        double n = 320.0 * 64 * 64;
        cases.push_back({"group_norm", "32 groups, 320x64x64", 8.0 * n, 2.0 * 4 * n,
                         [=] { group_norm(x, 32, w, b, 1e-5f); }});
    }
    return cases;
}

void usage() {
    std::printf(
        "usage: sd-bench [-t THREADS] [--min-time SECONDS] [--isa generic|avx2|avx512]\n"
        "       sd-bench --model FILE [--tokenizer-dir DIR] [-W 512] [-H 512] [--steps 3] [-t N]\n"
        "                [--params-backend cpu|disk] [--taesd FILE] [--lora FILE[:MULT]]\n"
        "                [--lora-apply-mode M] [--control-net FILE] [--cfg-scale 7]\n"
        "       sd-bench --diffusion-model FILE --vae FILE --clip_l FILE --t5xxl FILE ...\n"
        "                (FLUX as separate files; also [--guidance 3.5])\n"
        "       sd-bench --diffusion-model FILE --vae FILE --clip_l FILE --clip_g FILE\n"
        "                --t5xxl FILE ... (SD3 / SD3.5's MMDiT as separate files)\n"
        "       sd-bench --diffusion-model FILE --vae FILE --llm FILE ... (Z-Image)\n"
        "       sd-bench --diffusion-model FILE --vae FILE --t5xxl FILE --video-frames 1+4k\n"
        "                ... (Wan: the DiT pass and the decode of a W x H clip)\n"
        "       sd-bench --upscale-model FILE [-W 128] [-H 128] [--upscale-tile-size 128] [-t N]\n"
        "       sd-bench --t5 FILE [--t5-tokens 256] [-t N]\n"
        "       sd-bench --llm FILE [--llm-tokens 512] [--llm-layers N] [--params-backend disk]\n"
        "  -t THREADS        threads (default: physical cores); more than the usable CPUs are\n"
        "                    clamped with a warning, as sd-cli does\n"
        "  --oversubscribe   keep -t THREADS past the usable CPUs (to time the pool then)\n"
        "  --model FILE      time a whole model instead of single kernels: UNet pass, step, VAE\n"
        "  --params-backend  disk: the streaming low-memory mode (each layer's pages dropped)\n"
        "  --taesd FILE      with --model: also time TAESD's decode of the same latent\n"
        "  --steps N         sampling steps of the timed generation; 0: none (pass, decode)\n"
        "  --video-frames N  a video model's clip of N = 1 + 4k frames\n"
        "  --vae-tile-size N the VAE decode in tiles of N latent pixels (overlap 0.5)\n"
        "  --no-decode       no VAE decode (a large video's DiT pass alone)\n"
        "  --lora FILE[:M]   time the model with this LoRA (multiplier M, default 1)\n"
        "  --lora-apply-mode auto, immediately or at_runtime (default auto)\n"
        "  --upscale-model F time the ESRGAN upscaler on a W x H image (default 128x128)\n"
        "  --t5 FILE         time the T5 encoder (a --t5xxl file) on --t5-tokens ids\n"
        "  --llm FILE        time the LLM text encoder's prefill (an --llm file) on --llm-tokens\n"
        "                    ids, through its first --llm-layers blocks (default: all); with\n"
        "                    --diffusion-model, the model's LLM text encoder\n"
        "  --min-time S      seconds each case repeats for (default 2)\n"
        "  --isa NAME        kernel family to use (default: the best this CPU has)\n"
        "  --compute-type T  auto (default: bf16 products for bf16 weights), f32 or bf16:\n"
        "                    AVX512-BF16 products for every linear / conv (table: extra rows)\n");
}

int run(int argc, char** argv) {
    int threads = 0;
    bool oversubscribe = false;
    double min_time = 2.0;
    ModelBenchOptions model;
    UpscaleBenchOptions upscale;
    T5BenchOptions t5;
    LlmBenchOptions llm;
    ComputeType compute = ComputeType::Auto;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            SD_CHECK(i + 1 < argc, "%s needs a value", a.c_str());
            return argv[++i];
        };
        if (a == "--oversubscribe") {
            oversubscribe = true;
        } else if (a == "-t" || a == "--threads") {
            threads = std::atoi(value().c_str());
            SD_CHECK(threads > 0, "-t must be a positive number of threads");
        } else if (a == "--min-time") {
            min_time = std::atof(value().c_str());
            SD_CHECK(min_time > 0, "--min-time must be positive");
        } else if (a == "--isa") {
            std::string v = value();
            if (v == "generic")
                set_isa(Isa::Generic);
            else if (v == "avx2")
                set_isa(Isa::Avx2);
            else if (v == "avx512")
                set_isa(Isa::Avx512);
            else
                fail("--isa: unknown kernel family '%s' (generic, avx2, avx512)", v.c_str());
        } else if (a == "--compute-type") {
            std::string v = value();
            if (!parse_compute_type(v, &compute))
                fail("--compute-type: expected auto, f32 or bf16, not '%s'", v.c_str());
        } else if (a == "--model") {
            model.model = value();
        } else if (a == "--diffusion-model") {
            model.diffusion_model = value();
        } else if (a == "--vae") {
            model.vae = value();
        } else if (a == "--clip_l") {
            model.clip_l = value();
        } else if (a == "--clip_g") {
            model.clip_g = value();
        } else if (a == "--t5xxl") {
            model.t5xxl = value();
        } else if (a == "--cfg-scale") {
            model.cfg_scale = std::strtof(value().c_str(), nullptr);
        } else if (a == "--guidance") {
            model.guidance = std::strtof(value().c_str(), nullptr);
        } else if (a == "--upscale-model") {
            upscale.model = value();
        } else if (a == "--t5") {
            t5.model = value();
        } else if (a == "--t5-tokens") {
            t5.tokens = std::atoi(value().c_str());
        } else if (a == "--llm") {
            llm.model = value();
        } else if (a == "--llm-tokens") {
            llm.tokens = std::atoi(value().c_str());
        } else if (a == "--llm-layers") {
            llm.layers = std::atoi(value().c_str());
        } else if (a == "--upscale-tile-size") {
            upscale.tile_size = std::atoi(value().c_str());
        } else if (a == "--taesd") {
            model.taesd = value();
        } else if (a == "--control-net") {
            model.control_net = value();
        } else if (a == "--tokenizer-dir") {
            model.tokenizer_dir = value();
        } else if (a == "-W" || a == "--width") {
            model.width = upscale.width = std::atoi(value().c_str());
        } else if (a == "-H" || a == "--height") {
            model.height = upscale.height = std::atoi(value().c_str());
        } else if (a == "--steps") {
            model.steps = std::atoi(value().c_str());
            SD_CHECK(model.steps >= 0, "--steps must not be negative (0: no generation)");
        } else if (a == "--video-frames") {
            model.frames = std::atoi(value().c_str());
            SD_CHECK(model.frames >= 1, "--video-frames must be positive");
        } else if (a == "--no-decode") {
            model.decode = false;
        } else if (a == "--vae-tile-size") {
            model.vae_tile = std::atoi(value().c_str());
            SD_CHECK(model.vae_tile >= 8, "--vae-tile-size: at least 8 latent pixels");
        } else if (a == "--params-backend") {
            std::string v = value();
            SD_CHECK(v == "cpu" || v == "disk", "--params-backend: expected cpu or disk, not '%s'",
                     v.c_str());
            model.streamed = llm.streamed = v == "disk";
        } else if (a == "--lora") {
            model.lora = value();
            const size_t colon = model.lora.rfind(':');
            if (colon != std::string::npos && colon > 0) {
                model.lora_multiplier = std::strtof(model.lora.c_str() + colon + 1, nullptr);
                model.lora.resize(colon);
            }
        } else if (a == "--lora-apply-mode") {
            const std::string v = value();
            model.lora_mode = str_to_lora_apply_mode(v.c_str());
            SD_CHECK(model.lora_mode != LORA_APPLY_MODE_COUNT,
                     "--lora-apply-mode: expected auto, immediately or at_runtime, not '%s'",
                     v.c_str());
        } else if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else {
            usage();
            fail("unknown argument '%s'", a.c_str());
        }
    }
    set_num_threads(oversubscribe ? threads : threads_that_help(threads));
    const CpuFeatures& f = cpu_features();
    Isa isa = active_isa();
    std::printf("CPU: %s\n", f.describe().c_str());
    std::printf("threads: %d, kernels: %s, L1d %zu KiB, L2 %zu KiB\n", num_threads(), isa_name(isa),
                f.l1d_bytes / 1024, f.l2_bytes / 1024);
    double peak = measure_peak_gflops(isa, 0.5);
    std::printf("measured FP32 FMA peak (%s, %d threads): %.1f GFLOP/s\n", isa_name(isa),
                num_threads(), peak);
    double bf16_peak = 0;
    compute = set_compute_type(compute);
    model.compute = compute;
    if (compute != ComputeType::F32) {
        bf16_peak = measure_bf16_peak_gflops(0.5);
        std::printf("measured BF16 dot-product peak (%d threads): %.1f GFLOP/s; compute type %s\n",
                    num_threads(), bf16_peak, compute_type_name(compute));
    }
    std::printf("\n");
    if (!model.model.empty() || !model.diffusion_model.empty()) {
        model.llm = llm.model;  // with a diffusion model, --llm is its text encoder
        return run_model_bench(model, peak);
    }
    if (!upscale.model.empty()) return run_upscale_bench(upscale, peak);
    if (!t5.model.empty()) return run_t5_bench(t5, peak);
    if (!llm.model.empty()) return run_llm_bench(llm, peak, bf16_peak);
    set_compute_type(ComputeType::F32);
    std::printf("%-20s %-30s %10s %10s %8s %9s\n", "case", "shape", "ms", "GFLOP/s", "% peak",
                "GB/s");
    for (const Case& c : make_cases(compute == ComputeType::BF16, compute == ComputeType::Auto)) {
        set_compute_type(c.compute);
        const double case_peak = c.compute != ComputeType::F32 ? bf16_peak : peak;
        double s = median_seconds(c.run, min_time);
        double gflops = c.flops / s * 1e-9;
        std::string gbs = c.bytes > 0 ? strfmt("%9.1f", c.bytes / s * 1e-9) : "        -";
        std::printf("%-20s %-30s %10.3f %10.1f %7.1f%% %s\n", c.name.c_str(), c.shape.c_str(),
                    s * 1e3, gflops, 100.0 * gflops / case_peak, gbs.c_str());
        std::fflush(stdout);
    }
    set_compute_type(ComputeType::F32);
    return 0;
}

}  // namespace
}  // namespace sd::bench

int main(int argc, char** argv) {
    try {
        return sd::bench::run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sd-bench: %s\n", e.what());
        return 1;
    }
}
