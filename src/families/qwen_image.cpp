// Qwen-Image (text to image), as stable-diffusion.cpp runs it:
//   text: Qwen2.5-VL's language model through the LLM path (conditioners/llm_text_conditioner.h),
//         the prompt in the system + user chat template below, the final-normed hidden states,
//         the template's first 34 tokens dropped, no padding;
//   model: the Qwen-Image dual-stream DiT (models/qwen_image.h) predicting the flow velocity
//         (FLOW_PRED, shift 3.0); euler on the discrete schedule by default;
//   latent: the Wan 2.1 VAE (families/parts/wan_vae_codec.h), each of its 16 channels
//         normalised by Wan's mean and std.
// The Edit models read the reference images through Qwen2.5-VL's vision tower, not built yet:
// -r is refused (the family does not take reference images).
// Files: --diffusion-model, --llm (Qwen2.5-VL), --vae.
#include "models/qwen_image.h"

#include "base/error.h"
#include "conditioners/dit_text.h"
#include "conditioners/llm_text_conditioner.h"
#include "families/parts/wan_vae_codec.h"

namespace sd {

extern const Family kQwenImageFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kLlm = "text_encoders.llm.";

std::string detect(const ModelFiles& f) {
    return f.has_prefix(kDm + "transformer_blocks.0.img_mod.") ? "Qwen-Image" : "";
}

// The reference's text-to-image template; its system part and the user header are the 34
// tokens dropped.
const LlmPromptTemplate kQwenImagePrompt{
    "<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, "
    "quantity, text, spatial relationships of the objects and background:<|im_end|>\n"
    "<|im_start|>user\n",
    "<|im_end|>\n<|im_start|>assistant\n",
    {},
    34};

// Wan 2.1's latent statistics (its vae.py), which Qwen-Image's latents are normalised by.
constexpr float kWanMean[16] = {-0.7571f, -0.7089f, -0.9113f, 0.1075f,  -0.1745f, 0.9653f,
                                -0.1517f, 1.5508f,  0.4134f,  -0.0715f, 0.5517f,  -0.3632f,
                                -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
constexpr float kWanStd[16] = {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f,
                               2.6052f, 2.0743f, 3.2687f, 2.1526f, 2.8652f, 1.5579f,
                               1.6382f, 1.1253f, 2.8251f, 1.9160f};

class QwenImageDiffusionModel : public DiffusionModel {
  public:
    explicit QwenImageDiffusionModel(QwenImageModel model) : model_(std::move(model)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for Qwen-Image models");
        return model_.forward(x, timesteps, c.context);
    }
    int64_t in_channels() const override { return model_.config().in_channels; }
    // The reference aligns sizes to the VAE's factor alone; patches are padded inside.
    int64_t down_factor() const override { return 1; }
    CacheTarget cache_target() const override { return CacheTarget::DiT; }
    void release_weights() const override { model_.release_weights(); }
    size_t weight_bytes() const override { return model_.weight_pages().bytes(); }
    const QwenImageModel& model() const { return model_; }

  private:
    QwenImageModel model_;
};

// The LLM file is named with --llm when it holds no LLM or one of another width.
void check_llm(const ModelFiles& files, const LlmConfig& llm, int64_t context_dim) {
    SD_CHECK(llm.width == context_dim,
             "--llm %s is an LLM %lld wide; this Qwen-Image model reads states %lld wide "
             "(Qwen2.5-VL-7B's)",
             files.source_of(first_with(files, kLlm)).c_str(), (long long)llm.width,
             (long long)context_dim);
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    auto dit = std::make_unique<QwenImageDiffusionModel>(QwenImageModel::load(
        Weights(files, kDm, options.memory.residency), options.qwen_image_zero_cond_t));
    if (!files.has_prefix(kLlm)) fail_missing_role(files, kQwenImageFamily, ModelRole::Llm);
    Llm llm = load_llm_encoder(files, options, kLlm);
    check_llm(files, llm.config(), dit->model().config().context_dim);
    ModelComponents m;
    m.conditioner = std::make_unique<LlmTextConditioner>(find_llm_vocabulary(files, options, kLlm),
                                                         std::move(llm), kQwenImagePrompt);
    m.diffusion = std::move(dit);
    m.codec = load_wan_vae(files, options);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLOW_PRED), 3.0f);
    return m;
}

}  // namespace

// Qwen2.5-VL as the LLM (its vision tower, --llm_vision, comes with the Edit models).
constexpr RoleUse kQwenImageRoles[] = {{ModelRole::DiffusionModel, true},
                                       {ModelRole::Llm, true, "Qwen2.5-VL text encoder"},
                                       {ModelRole::Vae, true, "Wan 2.1 VAE"}};

// Defaults as the reference's for its flow models: euler on the discrete schedule.
extern const Family kQwenImageFamily{
    "Qwen-Image",
    detect,
    {EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER},
    {16, 8, 1.0f, 0.0f, {}, kWanMean, kWanStd, 1},
    assemble,
    {},
    {},  // -M convert's rules for it: not set yet
    kQwenImageRoles,
    "Qwen-Image (the Edit models' reference images not built yet)"};

}  // namespace sd
