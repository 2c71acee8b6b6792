// The files the server offers by name: LoRAs under --lora-model-dir and upscaler models in
// --hires-upscalers-dir, plus the built-in upscalers.
#pragma once

#include <string>
#include <vector>

namespace server {

struct ModelFile {
    std::string name;  // the file name without extension
    std::string path;  // relative to the folder (LoRAs) or absolute (upscalers)
};

// LoRA files (.safetensors, .gguf, .pt, .ckpt) up to two folders deep, sorted by path.
std::vector<ModelFile> list_loras(const std::string& dir);
// Upscaler models at the top of `dir` (.pth, .safetensors, .gguf, .bin), sorted by name.
std::vector<ModelFile> list_upscaler_models(const std::string& dir);
// "None", "Lanczos", "Nearest" and the latent modes, as the hires upscaler accepts them.
std::vector<std::string> builtin_upscalers();
std::vector<std::string> latent_upscale_modes();

}  // namespace server
