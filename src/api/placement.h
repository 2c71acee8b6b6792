// The reference's placement strings (backend, params_backend, max_vram) and its
// model_args extension string, read into what this CPU build can do with them; this
// engine's own context options (sd_ctx_ext_params_t) over them.
#pragma once

#include <string>
#include <vector>

#include "nn/weights.h"
#include "ops/compute_type.h"
#include "pipeline/load_options.h"
#include "stable-diffusion-ext.h"

namespace sd::api {

// The devices of this build, as sd_list_devices names them: "CPU", then the Vulkan devices
// (vulkan0, ...).
struct Device {
    std::string name;
    std::string description;
};
std::vector<Device> list_devices();

// "a,b,c" -> {"a", "b", "c"} (empty items kept).
std::vector<std::string> split_list(const std::string& s);

// "cpu", "CPU", "default", "auto" -> true; any other name -> false.
bool is_cpu_device(const std::string& name);

// One "component=value" entry of a spec; component "*" for a bare value, "*=" or "all=".
struct SpecEntry {
    std::string component;
    std::string value;
};
// Splits "cpu" / "te=cpu,vae=cpu" / "*=disk". Throws sd::Error naming `option` for an
// empty entry, an unknown component or an empty value.
std::vector<SpecEntry> parse_spec(const char* spec, const char* option);

struct Placement {
    Residency residency = Residency::Resident;
    // The devices of the diffusion model and the VAE (backend; keep_clip_on_cpu and
    // keep_vae_on_cpu over it) and the weight budget on a device (max_vram).
    DevicePlacement devices;
    bool keep_text_encoder = false;  // te placed explicitly on the CPU (--clip-on-cpu)
    bool keep_vae = false;           // vae placed explicitly on the CPU (--vae-on-cpu)
    // model_args' own keys (engine_options puts sd_ctx_ext_params_t over them).
    ComputeType compute_type = ComputeType::Auto;  // compute_type=auto|f32|bf16
    std::string tokenizer_dir;                     // tokenizer_dir=DIR (no comma)
    ChromaOptions chroma;  // chroma_use_dit_mask, chroma_use_t5_mask, chroma_t5_mask_pad
    bool qwen_image_zero_cond_t = false;  // qwen_image_zero_cond_t: Edit-2511's switch
};

// Reads backend, params_backend, max_vram, stream_layers and model_args. Throws sd::Error for
// a device that does not exist, a malformed spec or number, or an unknown model_args key.
Placement read_placement(const sd_ctx_params_t& p);

// model_args alone: the reference's keys (chroma_use_dit_mask, chroma_use_t5_mask,
// chroma_t5_mask_pad, qwen_image_zero_cond_t) and ours (compute_type, tokenizer_dir), the one
// list of them (model_args_keys). Throws sd::Error naming a malformed item, an unknown key
// or a bad value.
void read_model_args(const char* model_args, Placement& out);
const std::string& model_args_keys();  // "chroma_use_dit_mask, ..., tokenizer_dir"

// This engine's own context options: a field of sd_ctx_ext_params_t that is set wins over
// the same model_args key (read into `placement`), else the default. Throws sd::Error for a
// compute type out of range.
struct EngineOptions {
    ComputeType compute_type = ComputeType::Auto;
    std::string tokenizer_dir;
    int max_prompt_tokens = SD_DEFAULT_MAX_PROMPT_TOKENS;
};
EngineOptions engine_options(const Placement& placement, const sd_ctx_ext_params_t& ext);

// new_upscaler_ctx's backend / params_backend: the device backend names for the upscaler ("*"
// or "upscaler": a Vulkan device, or the CPU where there is no Vulkan, said in one line;
// other components' entries are ignored); the weights stream from disk when params_backend
// places the upscaler on "disk". Every device named must exist.
struct UpscalerPlacement {
    Residency residency = Residency::Resident;
    std::string device;  // empty: the CPU
};
UpscalerPlacement read_upscaler_placement(const char* backend, const char* params_backend);

}  // namespace sd::api
