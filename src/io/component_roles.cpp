#include "io/component_roles.h"

#include <algorithm>
#include <cstring>

namespace sd {
namespace {

using Names = const char* const[];

// ---- what each role's files are called and hold ----

// A whole model: the prefixes only a checkpoint's names have (besides every role's canonical
// prefix): SD's text encoder (cond_stage_model.*), sgm's (conditioner.*), ComfyUI's
// all-in-one text encoders (text_encoders.*).
constexpr Names kCheckpointMarks = {"cond_stage_model.", "conditioner.", "text_encoders."};

constexpr Names kDiffusionAliases = {"unet."};
constexpr Names kDiffusionFolders = {"unet", "transformer"};
// Wan2.2's experts saved as whole-model diffusion files keep the diffusion model's prefix.
constexpr Names kHighNoiseAliases = {"model.diffusion_model."};
// UNet (original and diffusers), FLUX, SD3.
constexpr Names kDiffusionMarks = {"input_blocks.", "down_blocks.", "time_embed", "double_blocks.",
                                   "joint_blocks."};

// SD 2.x's OpenCLIP (cond_stage_model.model.*), sgm's CLIP-L, ComfyUI's, and the
// cond_stage_model.* of SD 1.x checkpoints.
constexpr Names kClipLAliases = {"cond_stage_model.model.", "conditioner.embedders.0.",
                                 "text_encoders.clip_l.transformer.", "cond_stage_model."};
constexpr Names kClipLFolders = {"text_encoder"};
// Hugging Face CLIPTextModel, OpenCLIP.
constexpr Names kClipMarks = {"text_model.", "transformer.resblocks."};

constexpr Names kClipGAliases = {"conditioner.embedders.1.model.",
                                 "text_encoders.clip_g.transformer."};
constexpr Names kClipGFolders = {"text_encoder_2"};

constexpr Names kClipVisionAliases = {"vision_model."};
constexpr Names kClipVisionFolders = {"image_encoder"};  // Wan's image-to-video pipelines
constexpr Names kClipVisionMarks = {"vision_model."};

// SD3's third text encoder, FLUX's second, Wan's only one (UMT5).
constexpr Names kT5Folders = {"text_encoder_3", "text_encoder_2", "text_encoder"};
constexpr Names kT5Marks = {"encoder.block."};  // Hugging Face T5EncoderModel

constexpr Names kLlmFolders = {"text_encoder"};  // Qwen-Image, Z-Image
// Hugging Face causal LMs (Qwen, Llama, Mistral, Gemma; newer transformers nest them in
// model.language_model), llama.cpp's GGUF names.
constexpr Names kLlmMarks = {"model.embed_tokens.", "model.layers.", "model.language_model.",
                             "blk."};

constexpr Names kVaeAliases = {"vae."};
constexpr Names kVaeFolders = {"vae"};
constexpr Names kVaeMarks = {"encoder.conv_in.", "decoder.conv_in."};

// clang-format off
constexpr ComponentRole kRoles[] = {
    {ModelRole::Checkpoint, "model", "--model", "-m", "", "model_path",
     "path to the full model",
     "", {}, {}, kCheckpointMarks},
    {ModelRole::DiffusionModel, "diffusion model", "--diffusion-model", "", "",
     "diffusion_model_path", "path to a standalone diffusion model",
     "model.diffusion_model.", kDiffusionAliases, kDiffusionFolders, kDiffusionMarks},
    // Wan2.2 A14B's high-noise expert (families/wan.cpp).
    {ModelRole::HighNoiseDiffusionModel, "high-noise diffusion model",
     "--high-noise-diffusion-model", "", "", "high_noise_diffusion_model_path",
     "path to the standalone high-noise diffusion model (Wan2.2 MoE)",
     "model.high_noise_diffusion_model.", kHighNoiseAliases, {}, {}},
    {ModelRole::UncondDiffusionModel, "unconditional diffusion model",
     "--uncond-diffusion-model", "", "", "uncond_diffusion_model_path",
     "path to a separate diffusion model for the unconditional pass",
     "model.diffusion_model.uncond.", {}, {}, {}},
    {ModelRole::TextEncoder, "CLIP-L text encoder", "--clip_l", "", "", "clip_l_path",
     "path to the CLIP-L text encoder",
     "cond_stage_model.transformer.", kClipLAliases, kClipLFolders, kClipMarks},
    {ModelRole::TextEncoder2, "OpenCLIP bigG text encoder", "--clip_g", "", "", "clip_g_path",
     "path to the CLIP-G text encoder",
     "cond_stage_model.1.transformer.", kClipGAliases, kClipGFolders, kClipMarks},
    {ModelRole::ClipVision, "CLIP vision encoder", "--clip_vision", "", "", "clip_vision_path",
     "path to the CLIP vision encoder",
     "cond_stage_model.transformer.vision_model.", kClipVisionAliases, kClipVisionFolders,
     kClipVisionMarks},
    {ModelRole::T5, "T5-XXL text encoder", "--t5xxl", "", "", "t5xxl_path",
     "path to the T5-XXL text encoder",
     "text_encoders.t5xxl.transformer.", {}, kT5Folders, kT5Marks},
    {ModelRole::Llm, "LLM", "--llm", "", "--qwen2vl", "llm_path",
     "path to the LLM text encoder (Qwen3-4B for Z-Image, Qwen2.5-VL for Qwen-Image, "
     "Mistral for FLUX.2, ...)",
     "text_encoders.llm.", {}, kLlmFolders, kLlmMarks},
    {ModelRole::LlmVision, "LLM vision encoder", "--llm_vision", "", "--qwen2vl_vision",
     "llm_vision_path", "path to the LLM vision tower",
     "text_encoders.llm.visual.", {}, {}, {}},
    {ModelRole::Vae, "VAE", "--vae", "", "", "vae_path",
     "path to a standalone VAE",
     "first_stage_model.", kVaeAliases, kVaeFolders, kVaeMarks},
    {ModelRole::AudioVae, "audio VAE", "--audio-vae", "", "", "audio_vae_path",
     "path to the audio VAE",
     "audio_vae.", {}, {}, {}},
    {ModelRole::EmbeddingsConnectors, "embeddings connectors", "--embeddings-connectors", "", "",
     "embeddings_connectors_path", "path to the embeddings connectors model",
     "embeddings_connectors.", {}, {}, {}},
};
// clang-format on

static_assert(rows_in_role_order(kRoles), "one row per ModelRole, in its order");

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

bool has_mark(const std::vector<TensorRecord>& records, std::span<const char* const> marks) {
    for (const TensorRecord& r : records)
        for (const char* m : marks)
            if (starts_with(r.name, m)) return true;
    return false;
}

}  // namespace

std::span<const ComponentRole> component_roles() {
    return kRoles;
}

const ComponentRole& component_role(ModelRole role) {
    return kRoles[static_cast<size_t>(role)];
}

const char* model_role_name(ModelRole role) {
    return component_role(role).name;
}

const char* canonical_prefix(ModelRole role) {
    return component_role(role).prefix;
}

ModelRole role_of_name(std::string_view name) {
    ModelRole best = ModelRole::Checkpoint;
    size_t best_size = 0;
    for (const ComponentRole& r : kRoles) {
        const size_t n = std::strlen(r.prefix);
        if (n > best_size && starts_with(name, r.prefix)) {
            best = r.role;
            best_size = n;
        }
    }
    return best;
}

bool split_component_name(std::string_view name, ModelRole& role, std::string_view& rest) {
    role = role_of_name(name);
    if (role != ModelRole::Checkpoint) {
        rest = name.substr(std::strlen(canonical_prefix(role)));
        return true;
    }
    for (const ComponentRole& r : kRoles) {
        for (const char* alias : r.aliases) {
            if (starts_with(name, alias)) {
                role = r.role;
                rest = name.substr(std::strlen(alias));
                return true;
            }
        }
    }
    return false;
}

std::string_view strip_role_prefix(std::string_view name, ModelRole role) {
    const ComponentRole& r = component_role(role);
    if (r.prefix[0] && starts_with(name, r.prefix)) return name.substr(std::strlen(r.prefix));
    for (const char* alias : r.aliases)
        if (starts_with(name, alias)) return name.substr(std::strlen(alias));
    return name;
}

ModelRole recognise_role(const std::vector<TensorRecord>& records) {
    for (const TensorRecord& r : records)
        if (role_of_name(r.name) != ModelRole::Checkpoint) return ModelRole::Checkpoint;
    for (const ComponentRole& r : kRoles)
        if (has_mark(records, r.marks)) return r.role;
    return ModelRole::Checkpoint;
}

ModelRole pick_role(std::span<const ModelRole> candidates,
                    const std::vector<TensorRecord>& records) {
    for (ModelRole role : candidates)
        if (has_mark(records, component_role(role).marks)) return role;
    return candidates.empty() ? ModelRole::Checkpoint : candidates.front();
}

}  // namespace sd
