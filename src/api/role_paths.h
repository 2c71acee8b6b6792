// Which field of sd_ctx_params_t gives the file of each component role: the C side of the
// role table (io/component_roles.h names each field as text, ComponentRole::c_field;
// tests/api/role_paths_test.cpp checks that the two agree with the header's layout).
#pragma once

#include "io/component_roles.h"
#include "stable-diffusion.h"

namespace sd::api {

struct RolePath {
    ModelRole role;
    const char* sd_ctx_params_t::*path;
};

// In ModelRole's order, one entry a role.
inline constexpr RolePath kRolePaths[] = {
    {ModelRole::Checkpoint, &sd_ctx_params_t::model_path},
    {ModelRole::DiffusionModel, &sd_ctx_params_t::diffusion_model_path},
    {ModelRole::HighNoiseDiffusionModel, &sd_ctx_params_t::high_noise_diffusion_model_path},
    {ModelRole::UncondDiffusionModel, &sd_ctx_params_t::uncond_diffusion_model_path},
    {ModelRole::TextEncoder, &sd_ctx_params_t::clip_l_path},
    {ModelRole::TextEncoder2, &sd_ctx_params_t::clip_g_path},
    {ModelRole::ClipVision, &sd_ctx_params_t::clip_vision_path},
    {ModelRole::T5, &sd_ctx_params_t::t5xxl_path},
    {ModelRole::Llm, &sd_ctx_params_t::llm_path},
    {ModelRole::LlmVision, &sd_ctx_params_t::llm_vision_path},
    {ModelRole::Vae, &sd_ctx_params_t::vae_path},
    {ModelRole::AudioVae, &sd_ctx_params_t::audio_vae_path},
    {ModelRole::EmbeddingsConnectors, &sd_ctx_params_t::embeddings_connectors_path},
};

static_assert(rows_in_role_order(kRolePaths), "one field per ModelRole, in its order");

// The path `p` gives for `role` (may be NULL).
inline const char* role_path(const sd_ctx_params_t& p, ModelRole role) {
    return p.*kRolePaths[static_cast<size_t>(role)].path;
}

}  // namespace sd::api
