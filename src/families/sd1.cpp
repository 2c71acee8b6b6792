// Stable Diffusion 1.x (and its inpaint checkpoints): OpenAI CLIP ViT-L/14 text encoder
// (context 768, final layer norm, padded with the end token), the LDM UNet predicting eps,
// the KL VAE at scale 0.18215.
#include "conditioners/clip_text_conditioner.h"
#include "families/latent_rgb.h"
#include "families/parts/unet.h"

namespace sd {
namespace {

std::string detect(const ModelFiles& files) {
    if (unet_has_label_emb(files) || unet_context_dim(files) != 768) return "";
    switch (unet_in_channels(files)) {
        case 9:
            return "SD 1.x inpaint";
        case 8:
            return "SD 1.x instruct-pix2pix";
        default:
            return "SD 1.x";
    }
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    ModelComponents m;
    ClipBranch clip{load_clip_text_encoder(files, options, "cond_stage_model.transformer.")};
    std::vector<ClipBranch> branches;
    branches.push_back(std::move(clip));
    m.conditioner = std::make_unique<ContextConditioner>(make_text_conditioner(
        files, options, std::move(branches), ClipTokenizer::kEndOfTextId, /*clip_skip=*/1));
    add_unet_and_vae(m, load_unet(files, options), files, options, "SD 1.x");
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, EPS_PRED));
    m.ays_table = AysTable::Sd15;
    return m;
}

}  // namespace

constexpr RoleUse kSd1Roles[] = {
    {ModelRole::DiffusionModel, true}, {ModelRole::TextEncoder, true}, {ModelRole::Vae, true}};

extern const Family kSd1Family{"SD 1.x",
                               detect,
                               {},
                               {4, 8, 0.18215f, 0.0f, kSdRgb},
                               assemble,
                               {},
                               kUnetConvertKeeps,
                               kSd1Roles,
                               "SD 1.4, SD 1.5, their fine-tunes, inpaint models"};

}  // namespace sd
