// Families this build recognises but cannot run yet: detected from their block names so a
// user is told what the file holds (the SDXL refiner: an SDXL UNet of context 1280; Lumina 2).
// Each moves to a file of its own when it is built.
#include "families/family.h"
#include "families/parts/unet.h"

namespace sd {
namespace {

const std::string kDm = "model.diffusion_model.";

std::string detect_sdxl_refiner(const ModelFiles& f) {
    return unet_has_label_emb(f) && unet_context_dim(f) == 1280 ? "SDXL refiner" : "";
}
std::string detect_lumina2(const ModelFiles& f) {
    return f.has_prefix(kDm + "layers.0.attention.") ? "Lumina 2" : "";
}

// The parts each takes, so that a file given for one of them reaches the "cannot run yet"
// (and a part no family takes is refused before loading).
constexpr RoleUse kSdxlRefinerRoles[] = {
    {ModelRole::DiffusionModel, true}, {ModelRole::TextEncoder2, true}, {ModelRole::Vae, true}};
// Lumina 2: Gemma 2 as the LLM.
constexpr RoleUse kLumina2Roles[] = {
    {ModelRole::DiffusionModel, true}, {ModelRole::Llm, true}, {ModelRole::Vae, true}};

}  // namespace

extern const Family kSdxlRefinerFamily{
    "SDXL refiner",    detect_sdxl_refiner, {}, {4, 8, 0.13025f, 0.0f, {}}, nullptr, {}, {},
    kSdxlRefinerRoles, "SDXL refiner 1.0"};
extern const Family kLumina2Family{
    "Lumina 2",    detect_lumina2,    {}, {16, 8, 0.3611f, 0.1159f, {}}, nullptr, {}, {},
    kLumina2Roles, "Lumina Image 2.0"};

}  // namespace sd
