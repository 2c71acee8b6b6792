// FLUX.1 (dev, schnell; Kontext's reference images through Conditioning::ref_latents; Fill
// and Canny / Depth dev with their extra input channels, ModelComponents::extra_input), as
// stable-diffusion.cpp runs it:
//   text: CLIP-L's pooled output (the first 77-token window, every layer, final norm, the
//         end token's state; no projection) as the vector, and T5-XXL's states of 256-token
//         windows (prompt-weighted, mean restored) as the context (FluxCLIPEmbedder);
//   model: the FLUX DiT with the request's distilled guidance (dev), predicting the flow
//         velocity (FLUX_FLOW_PRED, shift 1.15 for dev, 1.0 for schnell);
//   latent: the 16-channel FLUX VAE at scale 0.3611, shift 0.1159.
// Files: --diffusion-model, --vae, --clip_l, --t5xxl, or one file holding them all.
#include <algorithm>

#include "base/error.h"
#include "conditioners/clip_text_conditioner.h"
#include "conditioners/dit_text.h"
#include "families/latent_rgb.h"
#include "families/parts/flux_dit.h"
#include "families/parts/kl_vae.h"
#include "models/flux.h"
#include "models/t5_encoder.h"
#include "tokenizer/t5_tokenizer.h"

namespace sd {

extern const Family kFluxFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kClip = "cond_stage_model.transformer.";
const std::string kT5 = "text_encoders.t5xxl.transformer.";
constexpr size_t kClipWindow = 77;
constexpr size_t kT5Window = 256;

// img_in's input width: 64 (the latent's 2x2 patches), Fill's 384 (+ masked-image latent and
// the 8x8 mask cells), Canny / Depth's 128 (+ the control image's latent), Flex.2's 196.
int64_t img_in_width(const ModelFiles& f) {
    const TensorRecord* img_in = f.find(kDm + "img_in.weight");
    return img_in && img_in->shape.size() == 2 ? img_in->shape[1] : 0;
}

ExtraInput extra_input_of(int64_t img_in_width) {
    if (img_in_width == 384) return ExtraInput::MaskedLatentAndPixelMask;
    if (img_in_width == 128) return ExtraInput::ControlLatent;
    return ExtraInput::None;
}

std::string detect(const ModelFiles& f) {
    if (!f.has_prefix(kDm + "double_blocks.")) return "";
    switch (img_in_width(f)) {
        case 384:
            return "FLUX.1 Fill";
        case 128:
            return "FLUX.1 Canny/Depth";
        case 196:
            return "Flex.2";
        default:
            break;
    }
    return f.find(kDm + "guidance_in.in_layer.weight") ? "FLUX.1-dev" : "FLUX.1-schnell";
}

class FluxConditioner : public Conditioner {
  public:
    FluxConditioner(ClipTokenizer clip_tokenizer, ClipTextEncoder clip, T5Tokenizer t5_tokenizer,
                    T5Encoder t5)
        : clip_tokenizer_(std::move(clip_tokenizer)),
          clip_(std::move(clip)),
          t5_tokenizer_(std::move(t5_tokenizer)),
          t5_(std::move(t5)) {}

    Conditioning encode(const ConditionRequest& r) const override {
        const WeightedIds clip =
            weighted_ids(r.prompt, [&](const std::string& t) { return clip_tokenizer_.encode(t); });
        Conditioning out;
        out.vector = pooled(clip.ids);
        out.context = t5_window_states(t5_tokenizer_, t5_, r.prompt, kT5Window);
        return out;
    }

    void release_weights() const override {
        clip_.release_weights();
        t5_.release_weights();
    }

  private:
    // CLIP-L's pooled vector of the first window: [1, 768].
    Tensor pooled(const std::vector<int32_t>& ids) const {
        std::vector<int32_t> window =
            clip_tokenizer_.pad_windows(ids, kClipWindow, ClipTokenizer::kEndOfTextId);
        window.resize(kClipWindow);
        Tensor tokens = Tensor::empty({1, static_cast<int64_t>(kClipWindow)}, DType::I32);
        std::copy(window.begin(), window.end(), tokens.data<int32_t>());
        const auto end = std::find(window.begin(), window.end(), clip_tokenizer_.eos_id());
        const int64_t index =
            std::min<int64_t>(end - window.begin(), static_cast<int64_t>(kClipWindow) - 1);
        return clip_.pooled(tokens, index);
    }

    ClipTokenizer clip_tokenizer_;
    ClipTextEncoder clip_;
    T5Tokenizer t5_tokenizer_;
    T5Encoder t5_;
};

// A text encoder given to the wrong option is named with the option it came through.
void check_text_encoders(const ModelFiles& files) {
    const bool clip = files.find(kClip + "text_model.embeddings.token_embedding.weight");
    const bool t5 = files.find(kT5 + "shared.weight") && files.has_prefix(kT5 + "encoder.block.");
    if (!t5 && files.has_prefix(kT5)) {
        fail(
            "--t5xxl: %s holds no T5 encoder (no shared.weight, encoder.block.N); is it a CLIP "
            "text encoder? FLUX wants T5-XXL there and CLIP-L in --clip_l",
            files.source_of(first_with(files, kT5)).c_str());
    }
    if (!clip && files.has_prefix(kClip)) {
        fail(
            "--clip_l: %s holds no CLIP text model (no text_model.embeddings); is it a T5 "
            "encoder? FLUX wants CLIP-L there and T5-XXL in --t5xxl",
            files.source_of(first_with(files, kClip)).c_str());
    }
    if (!clip) fail_missing_role(files, kFluxFamily, ModelRole::TextEncoder);
    if (!t5) fail_missing_role(files, kFluxFamily, ModelRole::T5);
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    if (img_in_width(files) == 196) fail("Flex.2 models are not supported by this build yet");
    check_text_encoders(files);
    ModelComponents m;
    m.conditioner = std::make_unique<FluxConditioner>(
        find_model_tokenizer(files, options), load_clip_text_encoder(files, options, kClip),
        find_t5_vocabulary(files, options),
        T5Encoder::load(Weights(files, kT5, options.memory.residency)));
    const Residency residency = options.memory.residency;
    auto flux =
        std::make_unique<FluxDiffusionModel>(FluxModel::load(Weights(files, kDm, residency)));
    const bool dev = flux->flux().config().guidance_embed;
    m.extra_input = extra_input_of(flux->flux().config().in_channels);
    m.diffusion = std::move(flux);
    m.codec = load_kl_vae(files, options);
    const auto* vae = dynamic_cast<const KlVaeCodec*>(m.codec.get());
    SD_CHECK(vae && vae->vae().config().z_channels == 16,
             "%s: the VAE has %lld latent channels; FLUX's has 16 (ae.safetensors)",
             files.describe_sources().c_str(),
             vae ? (long long)vae->vae().config().z_channels : 0LL);
    m.denoiser =
        make_denoiser(resolve_prediction(options.prediction, FLUX_FLOW_PRED), dev ? 1.15f : 1.0f);
    // Kontext's references: VAE latents beside the image's tokens, sides rounded to 16.
    m.ref_images = {true, "flux_kontext", 16};
    return m;
}

}  // namespace

// The FLUX DiT's input, conditioning and output layers stay in their own dtype in -M convert.
constexpr const char* kFluxConvertKeeps[] = {"img_in.",    "txt_in.",      "time_in.",
                                             "vector_in.", "guidance_in.", "final_layer."};

constexpr RoleUse kFluxRoles[] = {{ModelRole::DiffusionModel, true},
                                  {ModelRole::TextEncoder, true},
                                  {ModelRole::T5, true},
                                  {ModelRole::Vae, true, nullptr, "ae.safetensors: "}};

// Defaults as the reference's: euler on the flux schedule (its mu from the latent size).
extern const Family kFluxFamily{"FLUX",
                                detect,
                                {EULER_SAMPLE_METHOD, FLUX_SCHEDULER},
                                {16, 8, 0.3611f, 0.1159f, kFluxRgb},
                                assemble,
                                {},
                                kFluxConvertKeeps,
                                kFluxRoles,
                                "FLUX.1 dev, schnell, Kontext dev, Fill dev, Canny dev, Depth dev"};

}  // namespace sd
