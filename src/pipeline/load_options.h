// How the program was asked to load a model: what the families' assembly and the
// conditioners they build read besides the model's files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/components.h"
#include "sampling/denoiser.h"

namespace sd {

// A textual-inversion file (--embd-dir lists them).
struct EmbeddingFile {
    std::string name;  // the word that calls it in a prompt
    std::string path;  // .safetensors, .gguf, .pt, .ckpt, .bin
};

// Chroma's switches (--model-args chroma_*), with the reference's defaults.
struct ChromaOptions {
    bool dit_mask = true;  // chroma_use_dit_mask: the DiT's attention skips T5's <pad>s
    bool t5_mask = false;  // chroma_use_t5_mask: so does T5's own attention
    int t5_mask_pad = 1;   // chroma_t5_mask_pad: how many <pad>s the DiT still attends to
};

// The device each network runs on (empty: the CPU) and the bytes of weights a device keeps
// (--backend, --max-vram; pipeline/device_placement.h).
struct DevicePlacement {
    std::string diffusion;       // "vulkan0": the diffusion model (and a ControlNet's residuals)
    std::string vae;             // the latent codec
    std::string controlnet;      // a ControlNet (--control-net): where its residuals are made
    uint64_t weight_budget = 0;  // 0: no limit
    // --auto-fit with no device named: place the diffusion model and the VAE on the GPU by
    // their sizes once they are known (pipeline/device_placement.h: fit_to_devices).
    bool auto_fit = false;
    bool vae_on_cpu = false;  // --vae-on-cpu: auto-fit leaves the VAE on the CPU
};

// How the program was asked to load a model.
struct LoadOptions {
    std::string tokenizer_dir;                 // --tokenizer-dir
    std::string model_path;                    // where to look for a tokenizer/ folder
    std::vector<EmbeddingFile> embeddings;     // textual inversions (--embd-dir lists them)
    Prediction prediction = PREDICTION_COUNT;  // PREDICTION_COUNT: the model's own
    bool with_vae_encoder = true;              // img2img / inpaint need it
    MemoryPolicy memory;
    DevicePlacement devices;
    ChromaOptions chroma;
    bool qwen_image_zero_cond_t = false;  // --model-args qwen_image_zero_cond_t (Edit-2511)
};

}  // namespace sd
