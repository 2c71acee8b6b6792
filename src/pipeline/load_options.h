// How the program was asked to load a model: what the families' assembly and the
// conditioners they build read besides the model's files.
#pragma once

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

// How the program was asked to load a model.
struct LoadOptions {
    std::string tokenizer_dir;                 // --tokenizer-dir
    std::string model_path;                    // where to look for a tokenizer/ folder
    std::vector<EmbeddingFile> embeddings;     // textual inversions (--embd-dir lists them)
    Prediction prediction = PREDICTION_COUNT;  // PREDICTION_COUNT: the model's own
    bool with_vae_encoder = true;              // img2img / inpaint need it
    MemoryPolicy memory;
};

}  // namespace sd
