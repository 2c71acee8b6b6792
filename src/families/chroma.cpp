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
#include "base/error.h"
#include "conditioners/dit_text.h"
#include "families/latent_rgb.h"
#include "families/parts/flux_dit.h"
#include "families/parts/kl_vae.h"
#include "models/t5_encoder.h"
#include "tokenizer/t5_tokenizer.h"

namespace sd {

extern const Family kChromaFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kT5 = "text_encoders.t5xxl.transformer.";
constexpr size_t kT5Window = 512;

std::string detect(const ModelFiles& f) {
    return f.has_prefix(kDm + "double_blocks.") && f.has_prefix(kDm + "distilled_guidance_layer.")
               ? "Chroma"
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
void check_t5(const ModelFiles& files) {
    if (files.find(kT5 + "shared.weight") && files.has_prefix(kT5 + "encoder.block.")) return;
    if (files.has_prefix(kT5)) {
        fail(
            "--t5xxl: %s holds no T5 encoder (no shared.weight, encoder.block.N); Chroma wants "
            "T5-XXL there",
            files.source_of(first_with(files, kT5)).c_str());
    }
    fail_missing_role(files, kChromaFamily, ModelRole::T5);
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    check_t5(files);
    const Residency residency = options.memory.residency;
    ModelComponents m;
    m.conditioner = std::make_unique<ChromaConditioner>(
        find_t5_vocabulary(files, options), T5Encoder::load(Weights(files, kT5, residency)),
        options.chroma);
    m.diffusion =
        std::make_unique<FluxDiffusionModel>(FluxModel::load(Weights(files, kDm, residency)));
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

}  // namespace

constexpr RoleUse kChromaRoles[] = {{ModelRole::DiffusionModel, true},
                                    {ModelRole::T5, true},
                                    {ModelRole::Vae, true, nullptr, "ae.safetensors: "}};

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

}  // namespace sd
