// Stable Diffusion 1.x / 2.x image generation: txt2img, img2img, inpainting (with inpaint
// checkpoints and with ordinary ones), batches, classifier-free guidance; the same steps, in
// the same order and with the same random draws, as stable-diffusion.cpp's generate_image.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/model_family.h"
#include "io/model_files.h"
#include "models/autoencoder_kl.h"
#include "models/unet.h"
#include "pipeline/image_tensor.h"
#include "pipeline/text_conditioner.h"
#include "sampling/denoiser.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedulers.h"

namespace sd {

struct PipelineOptions {
    std::string tokenizer_dir;                 // --tokenizer-dir
    std::string model_path;                    // where to look for a tokenizer/ folder
    std::vector<EmbeddingFile> embeddings;     // textual inversions (--embd-dir lists them)
    Prediction prediction = PREDICTION_COUNT;  // PREDICTION_COUNT: the model's own
    bool with_vae_encoder = true;              // img2img / inpaint need it
    // Weights are views of the mmapped files. Resident: each network's pages leave RSS once
    // its phase of a generation is over (text encoder after the prompts, UNet before the
    // decode, VAE after it) unless kept below. Streamed: every layer's pages leave right
    // after its forward, for the smallest footprint (--params-backend disk).
    Residency residency = Residency::Resident;
    bool keep_text_encoder = false;  // keep_clip_on_cpu: stays in RSS between generations
    bool keep_vae = false;           // keep_vae_on_cpu
};

// The networks of one SD 1.x/2.x model, loaded from a model-file set.
struct SdModels {
    ModelFamilyInfo family;
    std::unique_ptr<TextConditioner> conditioner;
    UNet unet;
    AutoencoderKL vae;
    std::unique_ptr<Denoiser> denoiser;
    float latent_scale = 0.18215f;                     // latents = VAE latents * latent_scale
    bool keep_text_encoder = false, keep_vae = false;  // from PipelineOptions
    Residency residency = Residency::Resident;

    static SdModels load(const ModelFiles& files, const PipelineOptions& options);
};

struct VaeTiling {
    bool enabled = false;
    int tile_size = 32;    // in latent pixels
    float overlap = 0.5f;  // fraction of a tile shared with its neighbour
};

struct ImageRequest {
    std::string prompt, negative_prompt;
    int clip_skip = -1;
    int width = 512, height = 512;
    SampleMethod method = EULER_A_SAMPLE_METHOD;
    Scheduler scheduler = DISCRETE_SCHEDULER;
    int steps = 20;
    float cfg_scale = 7.0f;
    float eta = INFINITY;
    std::vector<float> custom_sigmas;
    int64_t seed = 42;
    int batch_count = 1;
    RngType rng = CUDA_RNG;
    RngType sampler_rng = RNG_TYPE_COUNT;
    std::optional<Image8> init_image;  // img2img / inpaint
    std::optional<Image8> mask_image;  // inpaint: white = repaint
    float strength = 0.75f;
    VaeTiling vae_tiling;
};

enum class CancelMode { None, All, AfterCurrentImage };

struct GenerationHooks {
    // Called after every sampling step: (step, steps, seconds since sampling started).
    std::function<void(int step, int steps, float seconds)> progress;
    const std::atomic<int>* cancel = nullptr;  // a CancelMode value, read between steps
};

// Throws sd::Error on bad requests and sd::Cancelled when cancelled with CancelMode::All.
std::vector<Image8> generate_images(const SdModels& models, const ImageRequest& request,
                                    const GenerationHooks& hooks = {});

}  // namespace sd
