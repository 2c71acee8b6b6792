// sd-bench --model: a whole model's figures at one image size: seconds per UNet pass (and
// ControlNet pass with --control-net), per sampling step (two passes with CFG) and for the
// VAE decode, each with GFLOP/s and % of
// the measured peak (FLOPs as counted by ops/flop_counter.h), and the process's peak RSS.
#pragma once

#include "stable-diffusion.h"

#include <string>

#include "ops/compute_type.h"

namespace sd::bench {

struct ModelBenchOptions {
    std::string model;
    // Component files (FLUX: --diffusion-model, --vae, --clip_l, --t5xxl; SD3 also --clip_g;
    // Z-Image: --diffusion-model, --vae, --llm), with or without -m.
    std::string diffusion_model, vae, clip_l, clip_g, t5xxl, llm;
    float cfg_scale = 7.0f;  // 1: one pass a step (no negative side)
    float guidance = 3.5f;   // distilled guidance (FLUX.1-dev)
    std::string tokenizer_dir;
    int width = 512, height = 512;
    int steps = 3;          // sampling steps timed (plus one VAE decode); 0: no generation
    int frames = 0;         // --video-frames: a video model's clip of 1 + 4k frames
    int vae_tile = 0;       // --vae-tile-size: the decode in tiles of this many latent pixels
    bool decode = true;     // --no-decode: time the diffusion model alone
    bool streamed = false;  // --params-backend disk (Residency::Streamed)
    std::string taesd;      // --taesd FILE: also time its decode of the same latent
    std::string lora;       // --lora FILE[:MULT]: timed with this LoRA applied
    float lora_multiplier = 1.0f;
    lora_apply_mode_t lora_mode = LORA_APPLY_AUTO;
    std::string control_net;  // --control-net: a ControlNet runs with each pass (its own row)
    ComputeType compute = ComputeType::Auto;  // --compute-type
    // A device ("vulkan0", sd-bench-vulkan --model): the diffusion model and the VAE run there
    // and the figures are against that device's peak.
    std::string backend;
};

int run_model_bench(const ModelBenchOptions& options, double peak_gflops);

// The process's peak RSS (getrusage) and current RSS, in MiB.
double peak_rss_mib();
double current_rss_mib();
// User + system CPU seconds of the whole process so far.
double cpu_seconds();
// One table row: wall-clock figures, then the same work per CPU-second against one thread's
// share of the peak: on a machine shared with other work the second stays meaningful
// (threads waiting on each other count against it, time taken by other processes does not).
void print_row(const char* what, double seconds, double cpu, double flops, double peak);

}  // namespace sd::bench
