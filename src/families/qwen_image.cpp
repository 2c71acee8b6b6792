// Qwen-Image and Qwen-Image-Edit, as stable-diffusion.cpp runs them:
//   text: Qwen2.5-VL's language model through the LLM path (conditioners/llm_text_conditioner.h),
//         the prompt in the system + user chat template below, the final-normed hidden states,
//         the template's first 34 tokens dropped, no padding;
//   edit: with reference images (-r) and the vision tower (visual.* in the --llm file, or
//         --llm_vision), each image read by the tower (models/qwen2_5_vl_vision.h) and spliced
//         into the Edit template's "Picture N: <|vision_start|>...<|vision_end|>" (64 tokens
//         dropped), and VAE-encoded as extra DiT tokens numbered 1, 2, ... (the "qwen" preset);
//   model: the Qwen-Image dual-stream DiT (models/qwen_image.h) predicting the flow velocity
//         (FLOW_PRED, shift 3.0); euler on the discrete schedule by default;
//   latent: the Wan 2.1 VAE (families/parts/wan_vae_codec.h), each of its 16 channels
//         normalised by Wan's mean and std;
//   Layered (addition_t_embedding in the DiT): --qwen-image-layers N gives N + 1 RGBA images
//         (the composite, then the layers) from one latent of N + 1 frames, decomposing the
//         reference image (-r) as the prompt describes it; its VAE is the RGBA Wan 2.1 VAE.
// Files: --diffusion-model, --llm (Qwen2.5-VL), --vae, optionally --llm_vision.
#include "models/qwen_image.h"

#include <string>

#include "base/error.h"
#include "conditioners/dit_text.h"
#include "conditioners/llm_text_conditioner.h"
#include "families/latent_rgb.h"
#include "families/parts/wan_vae_codec.h"

namespace sd {

extern const Family kQwenImageFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kLlm = "text_encoders.llm.";

// The reference rounds Qwen-Image's resized reference images to 32 pixels a side (16 for
// other families), as diffusers' calculate_dimensions.
constexpr int64_t kRefSideMultiple = 32;

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

// The reference's Edit template (QwenImageEditPlusPipeline): the system turn and the user
// header are the 64 tokens dropped; the pictures follow them.
const LlmPromptTemplate kQwenImageEditPrompt{
    "<|im_start|>system\nDescribe the key features of the input image (color, shape, size, "
    "texture, objects, background), then explain how the user's text instruction should alter "
    "or modify the image. Generate a new image that meets the user's requirements while "
    "maintaining consistency with the original input where appropriate.<|im_end|>\n"
    "<|im_start|>user\n",
    "<|im_end|>\n<|im_start|>assistant\n",
    {},
    64};

std::string edit_picture(int number, int64_t tokens) {
    std::string text = "Picture " + std::to_string(number) + ": <|vision_start|>";
    for (int64_t i = 0; i < tokens; ++i) text += "<|image_pad|>";
    return text + "<|vision_end|>";
}

class QwenImageDiffusionModel : public DiffusionModel {
  public:
    explicit QwenImageDiffusionModel(QwenImageModel model) : model_(std::move(model)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for Qwen-Image models");
        // The reference numbers Layered's references down whatever --ref-image-args say.
        const RefIndexMode ref_index =
            model_.config().additional_t_cond ? RefIndexMode::Decrease : c.ref_index;
        return model_.forward(x, timesteps, c.context, c.ref_latents, ref_index);
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

// The vision tower, when the files have one (visual.* in the --llm file, or --llm_vision).
std::optional<LlmVision> load_vision(const ModelFiles& files, const LoadOptions& options,
                                     int64_t context_dim) {
    const std::string prefix = kLlm + "visual.";
    if (!files.has_prefix(prefix)) return std::nullopt;
    const std::string source = files.source_of(first_with(files, prefix));
    try {
        LlmVision v{Qwen25VisionModel::load(Weights(files, prefix, options.memory.residency)),
                    kQwenImageEditPrompt, edit_picture, "<|image_pad|>"};
        SD_CHECK(v.tower.config().out_width == context_dim,
                 "its embeddings are %lld wide; the LLM reads %lld",
                 (long long)v.tower.config().out_width, (long long)context_dim);
        return v;
    } catch (const Error& e) {
        fail("vision tower in %s: %s", source.c_str(), e.what());
    }
}

// Qwen-Image-Layered: the latent's frames are the composite and its RGBA layers, each decoded
// by the Layered VAE to an RGBA image; the reference image (RGBA, alpha 1 where it has none) is
// a latent numbered -1; the prompt in the text-to-image template, without the vision tower
// (the reference's enable_vision = false).
ModelComponents assemble_layered(const ModelFiles& files, const LoadOptions& options,
                                 std::unique_ptr<QwenImageDiffusionModel> dit, Llm llm) {
    ModelComponents m;
    m.ref_images = {true, "qwen_layered", kRefSideMultiple, false};
    m.rgba_layers = true;
    m.conditioner = std::make_unique<LlmTextConditioner>(find_llm_vocabulary(files, options, kLlm),
                                                         std::move(llm), kQwenImagePrompt);
    m.diffusion = std::move(dit);
    m.codec = load_wan_vae(files, options, 4);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLOW_PRED), 3.0f);
    return m;
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    auto dit = std::make_unique<QwenImageDiffusionModel>(QwenImageModel::load(
        Weights(files, kDm, options.memory.residency), options.qwen_image_zero_cond_t));
    if (!files.has_prefix(kLlm)) fail_missing_role(files, kQwenImageFamily, ModelRole::Llm);
    Llm llm = load_llm_encoder(files, options, kLlm);
    check_llm(files, llm.config(), dit->model().config().context_dim);
    if (dit->model().config().additional_t_cond)
        return assemble_layered(files, options, std::move(dit), std::move(llm));
    std::optional<LlmVision> vision = load_vision(files, options, llm.width());
    ModelComponents m;
    // Reference images go through the tower into the prompt and, as latents, into the DiT;
    // without a tower they are refused (the reference would drop them from the prompt).
    m.ref_images = {true, "qwen", kRefSideMultiple, true};
    if (!vision) {
        m.ref_images.supported = false;
        m.ref_images.refusal =
            "Qwen-Image-Edit reads reference images with Qwen2.5-VL's vision tower, and --llm " +
            files.source_of(first_with(files, kLlm)) +
            " has none (no visual.* tensors): give the tower with --llm_vision, or an --llm file "
            "that holds it";
    }
    m.conditioner =
        std::make_unique<LlmTextConditioner>(find_llm_vocabulary(files, options, kLlm),
                                             std::move(llm), kQwenImagePrompt, std::move(vision));
    m.diffusion = std::move(dit);
    m.codec = load_wan_vae(files, options);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLOW_PRED), 3.0f);
    return m;
}

}  // namespace

// Qwen2.5-VL as the LLM; its vision tower (for the Edit models' reference images) in the LLM
// file or apart.
constexpr RoleUse kQwenImageRoles[] = {{ModelRole::DiffusionModel, true},
                                       {ModelRole::Llm, true, "Qwen2.5-VL text encoder"},
                                       {ModelRole::LlmVision, false, "Qwen2.5-VL vision tower"},
                                       {ModelRole::Vae, true, "Wan 2.1 VAE"}};

// The Wan 2.1 VAE decoding one image holds about 8.6 KB a pixel (sd-bench at 1024x1024: 8.4 GiB
// above the weights, against the KL VAE's 2.8 KB), so the streamed mode decodes in smaller
// tiles; the DiT's activations as the image families' default.
constexpr ActivationFootprint kQwenImageFootprint{2048, 8600};

// Defaults as the reference's for its flow models: euler on the discrete schedule.
extern const Family kQwenImageFamily{
    "Qwen-Image",
    detect,
    {EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER},
    {16, 8, 1.0f, 0.0f, kWan21Rgb, kWan21LatentMean, kWan21LatentStd, 1},
    assemble,
    kQwenImageFootprint,
    // -M convert: the reference tool's rules for every model
    // (FLUX's img_in. / txt_in. keep its input layers)
    {},
    kQwenImageRoles,
    "Qwen-Image, Qwen-Image-Edit, Qwen-Image-Layered"};

}  // namespace sd
