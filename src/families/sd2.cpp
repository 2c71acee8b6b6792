// Stable Diffusion 2.x (and its inpaint checkpoints): OpenCLIP ViT-H/14 text encoder
// (context 1024, penultimate layer, padded with 0), the LDM UNet predicting eps (512px
// base) or v (768px) - told apart by probing the network, as the reference does - and the
// KL VAE at scale 0.18215.
#include "base/log.h"
#include "conditioners/clip_text_conditioner.h"
#include "families/latent_rgb.h"
#include "families/parts/unet.h"
#include "ops/ops.h"

namespace sd {
namespace {

std::string detect(const ModelFiles& files) {
    if (unet_has_label_emb(files) || unet_context_dim(files) != 1024) return "";
    return unet_in_channels(files) == 9 ? "SD 2.x inpaint" : "SD 2.x";
}

// The eps and v checkpoints have the same tensors. Run the UNet once on a constant input
// at t = 999: a v-model's output lies well below its input there.
bool unet_predicts_v(const UNet& unet, int64_t latent_channels) {
    const UNetConfig& c = unet.config();
    Tensor x = Tensor::full({1, c.in_channels, 8, 8}, 0.5f);
    if (c.in_channels > latent_channels) {
        // Inpaint models: the extra mask and masked-image channels are zero.
        x = concat({Tensor::full({1, latent_channels, 8, 8}, 0.5f),
                    Tensor::zeros({1, c.in_channels - latent_channels, 8, 8})},
                   1);
    }
    Tensor out =
        unet.forward(x, Tensor::full({1}, 999.0f), Tensor::full({1, 2, c.context_dim}, 0.5f));
    std::vector<float> o = out.to_vector();
    double diff = 0;
    for (float v : o) diff += static_cast<double>(v) - 0.5;
    return diff / static_cast<double>(o.size()) < -1.0;
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    ModelComponents m;
    std::vector<ClipBranch> branches;
    branches.push_back({load_clip_text_encoder(files, options, "cond_stage_model.transformer.")});
    m.conditioner = std::make_unique<ContextConditioner>(
        make_text_conditioner(files, options, std::move(branches), /*pad_id=*/0, /*clip_skip=*/2));
    auto unet = load_unet(files, options);
    Prediction prediction = options.prediction;
    if (prediction == PREDICTION_COUNT) {
        const bool v = unet_predicts_v(unet->unet(), 4);
        SD_LOG_INFO("SD 2.x checkpoint predicts %s", v ? "v" : "eps");
        prediction = v ? V_PRED : EPS_PRED;
    }
    add_unet_and_vae(m, std::move(unet), files, options, "SD 2.x");
    m.denoiser = make_denoiser(prediction);
    m.ays_table = AysTable::Sd15;  // the reference has no SD 2.x table and uses SD 1.5's
    return m;
}

}  // namespace

// Its OpenCLIP ViT-H text encoder comes as --clip_l, the first (and only) text encoder.
constexpr RoleUse kSd2Roles[] = {{ModelRole::DiffusionModel, true},
                                 {ModelRole::TextEncoder, true, "OpenCLIP ViT-H text encoder"},
                                 {ModelRole::Vae, true}};

extern const Family kSd2Family{"SD 2.x",
                               detect,
                               {},
                               {4, 8, 0.18215f, 0.0f, kSdRgb},
                               assemble,
                               {},
                               kUnetConvertKeeps,
                               kSd2Roles,
                               "SD 2.0, SD 2.1 (512 and 768-v), their fine-tunes"};

}  // namespace sd
