// Z-Image (Turbo and base), as stable-diffusion.cpp runs it:
//   text: Qwen3-4B through the LLM path (conditioners/llm_text_conditioner.h), the prompt in
//         the chat template "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n", the
//         hidden states after 35 of its 36 layers (hidden_states[-2]), no padding;
//   model: the Z-Image single-stream DiT (models/z_image.h) predicting the flow velocity
//         (FLOW_PRED, shift 3.0);
//   latent: the 16-channel FLUX VAE at scale 0.3611, shift 0.1159.
// Turbo runs in few steps at cfg 1; the base model takes cfg > 1 and a negative prompt: the
// same files and layout, so one family with the reference's defaults for both.
// Files: --diffusion-model, --llm, --vae.
#include "models/z_image.h"
#include "base/error.h"
#include "conditioners/dit_text.h"
#include "conditioners/llm_text_conditioner.h"
#include "families/latent_rgb.h"
#include "families/parts/kl_vae.h"

namespace sd {

extern const Family kZImageFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kLlm = "text_encoders.llm.";
// Z-Image's adaLN input is 256 wide (Lumina 2's: 1024), which tells the two NextDiTs apart.
constexpr int64_t kAdaLnWidth = 256;

std::string detect(const ModelFiles& f) {
    if (!f.find(kDm + "cap_embedder.0.weight")) return "";
    const TensorRecord* t = f.find(kDm + "t_embedder.mlp.2.weight");
    return t && t->shape.size() == 2 && t->shape[0] == kAdaLnWidth ? "Z-Image" : "";
}

const LlmPromptTemplate kZImagePrompt{
    "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", {35}, 0};

class ZImageDiffusionModel : public DiffusionModel {
  public:
    explicit ZImageDiffusionModel(ZImageModel model) : model_(std::move(model)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for Z-Image models");
        return model_.forward(x, timesteps, c.context);
    }
    int64_t in_channels() const override { return model_.config().in_channels; }
    // The reference aligns sizes to the VAE's factor alone; patches are padded inside.
    int64_t down_factor() const override { return 1; }
    void release_weights() const override { model_.release_weights(); }
    CacheTarget cache_target() const override { return CacheTarget::DiT; }
    size_t weight_bytes() const override { return model_.weight_pages().bytes(); }
    const ZImageModel& model() const { return model_; }

  private:
    ZImageModel model_;
};

// The LLM file is named with --llm when it holds no LLM, another LLM, or one of another width.
void check_llm(const ModelFiles& files, const LlmConfig& llm, int64_t cap_dim) {
    const std::string file = files.source_of(first_with(files, kLlm));
    SD_CHECK(!files.has_prefix(kLlm + "visual."),
             "--llm %s holds a vision-language model (Qwen2.5-VL: visual.* tensors); Z-Image "
             "takes Qwen3-4B there",
             file.c_str());
    SD_CHECK(llm.width == cap_dim,
             "--llm %s is an LLM %lld wide; this Z-Image model reads states %lld wide "
             "(Qwen3-4B's)",
             file.c_str(), (long long)llm.width, (long long)cap_dim);
}

Llm load_llm(const ModelFiles& files, const LoadOptions& options) {
    if (!files.has_prefix(kLlm)) fail_missing_role(files, kZImageFamily, ModelRole::Llm);
    return load_llm_encoder(files, options, kLlm);
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    const Residency residency = options.memory.residency;
    auto dit =
        std::make_unique<ZImageDiffusionModel>(ZImageModel::load(Weights(files, kDm, residency)));
    Llm llm = load_llm(files, options);
    check_llm(files, llm.config(), dit->model().config().cap_dim);
    ModelComponents m;
    m.conditioner = std::make_unique<LlmTextConditioner>(find_llm_vocabulary(files, options, kLlm),
                                                         std::move(llm), kZImagePrompt);
    m.diffusion = std::move(dit);
    m.codec = load_kl_vae(files, options);
    const auto* vae = dynamic_cast<const KlVaeCodec*>(m.codec.get());
    SD_CHECK(vae && vae->vae().config().z_channels == 16,
             "%s: the VAE has %lld latent channels; Z-Image's (FLUX's ae.safetensors) has 16",
             files.describe_sources().c_str(),
             vae ? (long long)vae->vae().config().z_channels : 0LL);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLOW_PRED), 3.0f);
    return m;
}

}  // namespace

// The DiT's input, conditioning and output layers stay in their own dtype in -M convert.
constexpr const char* kZImageConvertKeeps[] = {"x_embedder.",  "cap_embedder.", "t_embedder.",
                                               "final_layer.", "x_pad_token",   "cap_pad_token"};

constexpr RoleUse kZImageRoles[] = {{ModelRole::DiffusionModel, true},
                                    {ModelRole::Llm, true, "Qwen3-4B text encoder"},
                                    {ModelRole::Vae, true, nullptr, "ae.safetensors: "}};

// Defaults as the reference's for its flow models: euler on the discrete schedule.
extern const Family kZImageFamily{"Z-Image",
                                  detect,
                                  {EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER},
                                  {16, 8, 0.3611f, 0.1159f, kFluxRgb},
                                  assemble,
                                  {},
                                  kZImageConvertKeeps,
                                  kZImageRoles,
                                  "Z-Image-Turbo, Z-Image"};

}  // namespace sd
