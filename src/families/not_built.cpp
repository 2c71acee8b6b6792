// Families this build recognises but cannot run yet: detected from their block names so a
// user is told what the file holds. Each moves to a file of its own when it is built.
#include "families/family.h"

namespace sd {
namespace {

const std::string kDm = "model.diffusion_model.";

std::string detect_sd3(const ModelFiles& f) {
    return f.has_prefix(kDm + "joint_blocks.") ? "SD3" : "";
}
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

// The MMDiT's patch, position, timestep, pooled-vector and context embedders stay in their
// own dtype in -M convert.
constexpr const char* kMmditConvertKeeps[] = {"x_embedder.", "t_embedder.", "y_embedder.",
                                              "pos_embed", "context_embedder."};
extern const Family kSd3Family{"SD3", detect_sd3,        {}, {16, 8, 1.5305f, 0.0609f}, nullptr,
                               {},    kMmditConvertKeeps};
extern const Family kChromaFamily{"Chroma", detect_chroma, {}, {16, 8, 0.3611f, 0.1159f}};
// Wan's and Qwen-Image's VAEs normalise each latent channel by its own mean and std; their
// latent formats are declared when they are built.
extern const Family kWanFamily{"Wan", detect_wan, {}, {16, 8, 1.0f, 0.0f}};
extern const Family kQwenImageFamily{"Qwen-Image", detect_qwen_image, {}, {16, 8, 1.0f, 0.0f}};
extern const Family kLumina2Family{"Lumina 2", detect_lumina2, {}, {16, 8, 0.3611f, 0.1159f}};

}  // namespace sd
