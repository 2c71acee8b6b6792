// Families this build recognises but cannot run yet: detected from their block names so a
// user is told what the file holds. Each moves to a file of its own when it is built.
#include "families/family.h"

namespace sd {
namespace {

const std::string kDm = "model.diffusion_model.";

std::string detect_chroma(const ModelFiles& f) {
    return f.has_prefix(kDm + "double_blocks.") && f.has_prefix(kDm + "distilled_guidance_layer.")
               ? "Chroma"
               : "";
}
std::string detect_wan(const ModelFiles& f) {
    return f.has_prefix(kDm + "blocks.0.cross_attn.") || f.has_prefix(kDm + "blocks.0.self_attn.")
               ? "Wan"
               : "";
}
std::string detect_qwen_image(const ModelFiles& f) {
    return f.has_prefix(kDm + "transformer_blocks.0.img_mod.") ? "Qwen-Image" : "";
}
std::string detect_lumina2(const ModelFiles& f) {
    return f.has_prefix(kDm + "layers.0.attention.") ? "Lumina 2" : "";
}

}  // namespace

extern const Family kChromaFamily{"Chroma", detect_chroma, {}, {16, 8, 0.3611f, 0.1159f}};
// Wan's and Qwen-Image's VAEs normalise each latent channel by its own mean and std; their
// latent formats are declared when they are built.
extern const Family kWanFamily{"Wan", detect_wan, {}, {16, 8, 1.0f, 0.0f}};
extern const Family kQwenImageFamily{"Qwen-Image", detect_qwen_image, {}, {16, 8, 1.0f, 0.0f}};
extern const Family kLumina2Family{"Lumina 2", detect_lumina2, {}, {16, 8, 0.3611f, 0.1159f}};

}  // namespace sd
