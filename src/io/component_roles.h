// The component roles: what a file given to the program holds (-m a whole model,
// --diffusion-model, --vae, --clip_l, --llm ... one part of it), as one table. Each row
// says how the part is named to the user (its words, its sd-cli option, its field of
// sd_ctx_params_t), where its tensors live in the canonical namespace (name_conversion.h),
// which diffusers subfolders hold it, and how a file of it is recognised from its names.
//
// Everything that deals with component files walks this table: the file loader
// (model_files, name_conversion), the C API's context (which path of sd_ctx_params_t is
// which role; api/role_paths.h holds the struct members), -M convert, LoRA name mapping,
// sd-cli's options, and the families, which declare the roles they take
// (families/family.h: Family::roles). A new component is one row here (and one enumerator).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "io/tensor_file.h"

namespace sd {

// In the table's order, which is the order the C API adds the files in (the reference's).
// TextEncoder is the first (or only) CLIP text encoder (--clip_l), TextEncoder2 the OpenCLIP
// bigG of SDXL / SD3 (--clip_g), T5 the T5-XXL encoder (--t5xxl).
enum class ModelRole {
    Checkpoint,
    DiffusionModel,
    HighNoiseDiffusionModel,
    UncondDiffusionModel,
    TextEncoder,
    TextEncoder2,
    ClipVision,
    T5,
    Llm,
    LlmVision,
    Vae,
    AudioVae,
    EmbeddingsConnectors,
};
inline constexpr size_t kModelRoleCount = 13;

// Whether rows[i].role is ModelRole(i) for every row: the tables indexed by role (this one,
// api/role_paths.h) check it at compile time.
template <class Row, size_t N>
constexpr bool rows_in_role_order(const Row (&rows)[N]) {
    for (size_t i = 0; i < N; ++i)
        if (rows[i].role != static_cast<ModelRole>(i)) return false;
    return N == kModelRoleCount;
}

struct ComponentRole {
    ModelRole role;
    const char* name;          // in messages: "diffusion model", "LLM", "CLIP-L text encoder"
    const char* option;        // sd-cli's option: "--diffusion-model", "--clip_l"
    const char* short_option;  // "-m", or ""
    const char* old_option;    // a deprecated spelling sd-cli also takes ("--qwen2vl"), or ""
    const char* c_field;       // its path in sd_ctx_params_t: "diffusion_model_path"
    const char* help;          // sd-cli -h: "path to a standalone VAE"
    // Where its tensors live in the canonical namespace ("" for a whole checkpoint). A
    // prefix may lie inside another role's ("text_encoders.llm.visual." in
    // "text_encoders.llm."): a name belongs to the role with the longest prefix it has.
    const char* prefix;
    // Other prefixes a checkpoint (or a separate file of this role) carries the part under:
    // ComfyUI's "text_encoders.clip_l.transformer.", sgm's "conditioner.embedders.0." ...
    std::span<const char* const> aliases;
    // The diffusers subfolders that may hold it ("unet", "transformer"); a folder several
    // roles list (text_encoder_2: SDXL's bigG, FLUX's T5) goes to the first whose marks
    // its names have.
    std::span<const char* const> diffusers_folders;
    // How a file of this role is recognised: a name starting with one of these (after any
    // prefix). For Checkpoint: the prefixes only a whole model's files have.
    std::span<const char* const> marks;
};

// Every role, in ModelRole's order.
std::span<const ComponentRole> component_roles();
const ComponentRole& component_role(ModelRole role);
// The role's words for messages ("VAE", "LLM").
const char* model_role_name(ModelRole role);
// The canonical prefix of a component role ("" for a whole checkpoint).
const char* canonical_prefix(ModelRole role);

// The role a canonical tensor name belongs to: the one with the longest prefix it starts
// with; Checkpoint when it has none.
ModelRole role_of_name(std::string_view canonical_name);

// A checkpoint's tensor name split into its component and the name below it: the longest
// canonical prefix it starts with, else the first alias in table order. False when it has
// neither (a tensor of no component: kept for the loader's report).
bool split_component_name(std::string_view name, ModelRole& role, std::string_view& rest);

// `name` of a file given for `role` without the role's canonical prefix or alias, when it
// starts with one.
std::string_view strip_role_prefix(std::string_view name, ModelRole role);

// What a file holds, from its names: Checkpoint when a name has a canonical prefix or a
// checkpoint mark, else the first role in table order with a name that has one of its marks,
// else Checkpoint (names of no known layout).
ModelRole recognise_role(const std::vector<TensorRecord>& records);

// Of `candidates`, the first one a name of `records` has a mark of; else the first candidate.
ModelRole pick_role(std::span<const ModelRole> candidates,
                    const std::vector<TensorRecord>& records);

}  // namespace sd
