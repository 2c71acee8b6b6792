// Chroma (lodestones' FLUX.1-schnell derivative), as stable-diffusion.cpp runs it:
//   text: T5-XXL alone, the prompt-weighted ids in windows of 512 (T5CLIPEmbedder), with the
//         reference's padding mask: the DiT's attention skips the <pad>s but the first
//         `chroma_t5_mask_pad` of them (chroma_use_dit_mask, on by default), T5's own
//         attention skips them too when chroma_use_t5_mask is on (off by default);
//   model: the FLUX DiT with Chroma's distilled guidance layer (models/chroma_approximator.h)
//         in place of its modulation inputs, guided by real CFG (a negative prompt), predicting
//         the flow velocity (FLUX_FLOW_PRED, shift 1.0 as schnell: no guidance_in);
//   latent: the 16-channel FLUX VAE at scale 0.3611, shift 0.1159.
// Files: --diffusion-model, --t5xxl, --vae.
// Chroma-Radiance (models/chroma_radiance.h) is the same text path and guidance on a DiT that
// diffuses the picture itself: no VAE (the reference's FakeVAE, PixelCodec here), the image in
// [-1, 1] as a 3-channel latent at full size.
#include "base/error.h"
#include "base/log.h"
#include "conditioners/dit_text.h"
#include "families/latent_rgb.h"
#include "families/parts/flux_dit.h"
#include "families/parts/kl_vae.h"
#include "families/parts/pixel_codec.h"
#include "models/chroma_radiance.h"
#include "models/t5_encoder.h"
#include "tokenizer/t5_tokenizer.h"

namespace sd {

extern const Family kChromaFamily;
extern const Family kChromaRadianceFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kT5 = "text_encoders.t5xxl.transformer.";
constexpr size_t kT5Window = 512;

std::string detect(const ModelFiles& f) {
    return f.has_prefix(kDm + "double_blocks.") && f.has_prefix(kDm + "distilled_guidance_layer.")
               ? "Chroma"
               : "";
}

// As the reference's: the NeRF head's final convolution or the pixel patch embedding.
std::string detect_radiance(const ModelFiles& f) {
    return f.has_prefix(kDm + "double_blocks.") && (f.has_prefix(kDm + "nerf_final_layer_conv.") ||
                                                    f.find(kDm + "img_in_patch.weight"))
               ? "Chroma-Radiance"
               : "";
}

class ChromaConditioner : public Conditioner {
  public:
    ChromaConditioner(T5Tokenizer tokenizer, T5Encoder t5, ChromaOptions options)
        : tokenizer_(std::move(tokenizer)), t5_(std::move(t5)), options_(options) {}

    Conditioning encode(const ConditionRequest& r) const override {
        std::vector<float> keep;
        Conditioning out;
        out.context =
            t5_window_states(tokenizer_, t5_, r.prompt, kT5Window, &keep, options_.t5_mask);
        if (options_.dit_mask) out.context_mask = t5_key_mask(keep, options_.t5_mask_pad);
        return out;
    }

    void release_weights() const override { t5_.release_weights(); }

  private:
    T5Tokenizer tokenizer_;
    T5Encoder t5_;
    ChromaOptions options_;
};

// The T5 file is named with --t5xxl when it holds something else (a CLIP, ...).
void check_t5(const ModelFiles& files, const Family& family) {
    if (files.find(kT5 + "shared.weight") && files.has_prefix(kT5 + "encoder.block.")) return;
    if (files.has_prefix(kT5)) {
        fail(
            "--t5xxl: %s holds no T5 encoder (no shared.weight, encoder.block.N); Chroma wants "
            "T5-XXL there",
            files.source_of(first_with(files, kT5)).c_str());
    }
    fail_missing_role(files, family, ModelRole::T5);
}

std::unique_ptr<Conditioner> load_conditioner(const ModelFiles& files, const LoadOptions& options,
                                              const Family& family) {
    check_t5(files, family);
    return std::make_unique<ChromaConditioner>(
        find_t5_vocabulary(files, options),
        T5Encoder::load(Weights(files, kT5, options.memory.residency)), options.chroma);
}

// Chroma-Radiance's DiT as a family's diffusion model: reads the context and its mask.
class ChromaRadianceDiffusionModel : public DiffusionModel {
  public:
    explicit ChromaRadianceDiffusionModel(ChromaRadianceModel model) : model_(std::move(model)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for Chroma-Radiance");
        return model_.forward(x, timesteps, c.context, c.context_mask);
    }
    int64_t in_channels() const override { return model_.config().channels; }
    // Patches are padded inside, as FLUX's.
    int64_t down_factor() const override { return 1; }
    void release_weights() const override { model_.release_weights(); }
    size_t weight_bytes() const override { return model_.weight_pages().bytes(); }
    CacheTarget cache_target() const override { return CacheTarget::DiT; }

  private:
    ChromaRadianceModel model_;
};

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    ModelComponents m;
    m.conditioner = load_conditioner(files, options, kChromaFamily);
    m.diffusion = std::make_unique<FluxDiffusionModel>(
        FluxModel::load(Weights(files, kDm, options.memory.residency)));
    std::unique_ptr<KlVaeCodec> vae = load_kl_vae(files, options);
    SD_CHECK(vae->vae().config().z_channels == 16,
             "%s: the VAE has %lld latent channels; Chroma's (FLUX's ae.safetensors) has 16",
             files.describe_sources().c_str(), (long long)vae->vae().config().z_channels);
    m.codec = std::move(vae);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLUX_FLOW_PRED), 1.0f);
    // FLUX's reference images (Kontext's way), as the reference passes them to any FLUX DiT.
    m.ref_images = {true, "flux_kontext", 16};
    return m;
}

ModelComponents assemble_radiance(const ModelFiles& files, const LoadOptions& options) {
    ModelComponents m;
    m.conditioner = load_conditioner(files, options, kChromaRadianceFamily);
    m.diffusion = std::make_unique<ChromaRadianceDiffusionModel>(
        ChromaRadianceModel::load(Weights(files, kDm, options.memory.residency)));
    if (files.has_prefix("first_stage_model."))
        SD_LOG_WARN("%s: Chroma-Radiance works on pixels; the VAE given is not used",
                    files.source_of(first_with(files, "first_stage_model.")).c_str());
    m.codec = std::make_unique<PixelCodec>();
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLUX_FLOW_PRED), 1.0f);
    return m;  // no reference images: the reference's radiance forward reads none
}

}  // namespace

constexpr RoleUse kChromaRoles[] = {{ModelRole::DiffusionModel, true},
                                    {ModelRole::T5, true},
                                    {ModelRole::Vae, true, nullptr, "ae.safetensors: "}};

// Works on pixels: a VAE is taken (a Chroma command line's --vae) but not used.
constexpr RoleUse kChromaRadianceRoles[] = {
    {ModelRole::DiffusionModel, true}, {ModelRole::T5, true}, {ModelRole::Vae}};

// Defaults as the reference's for the FLUX DiTs: euler on the flux schedule. Its -M convert
// keeps are FLUX's (every family's apply to a conversion).
extern const Family kChromaFamily{"Chroma",
                                  detect,
                                  {EULER_SAMPLE_METHOD, FLUX_SCHEDULER},
                                  {16, 8, 0.3611f, 0.1159f, kFluxRgb},
                                  assemble,
                                  {},
                                  {},
                                  kChromaRoles,
                                  "Chroma, Chroma1-HD, Chroma1-Base"};

extern const Family kChromaRadianceFamily{"Chroma-Radiance",
                                          detect_radiance,
                                          {EULER_SAMPLE_METHOD, FLUX_SCHEDULER},
                                          {3, 1, 1.0f, 0.0f, kPixelRgb},
                                          assemble_radiance,
                                          {},
                                          {},
                                          kChromaRadianceRoles,
                                          "Chroma1-Radiance"};

}  // namespace sd
