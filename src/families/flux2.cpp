// FLUX.2 (klein 4B / 9B and dev 32B), as stable-diffusion.cpp runs it:
//   text: an LLM through the LLM path (conditioners/llm_text_conditioner.h).
//         klein: Qwen3, the prompt in the chat template "<|im_start|>user\n{prompt}<|im_end|>\n
//         <|im_start|>assistant\n<think>\n\n</think>\n\n", padded to 512 tokens (padding
//         masked out of the keys), the hidden states after layers 9, 18 and 27 concatenated
//         (3 x 2560 for Qwen3-4B).
//         dev: Mistral-Small-3.2 (tekken vocabulary, <s> in front), the prompt in
//         "[SYSTEM_PROMPT]...[/SYSTEM_PROMPT][INST]{prompt}[/INST]", unpadded, the hidden states
//         after layers 10, 20 and 30 concatenated (3 x 5120), zero rows added up to 512;
//   model: the FLUX.2 DiT (models/flux2.h) predicting the flow velocity (FLUX_FLOW_PRED);
//         euler on the flux2 schedule (mu from the image tokens and the steps) by default;
//   latent: the 32-channel FLUX.2 VAE (quant convs; encode takes the posterior's mean), its
//         latents' 2x2 patches folded into 128 channels, each normalised by the reference's
//         fixed mean and std.
// dev is told from klein by its 48th single block; its DiT also embeds the distilled guidance.
// Files: --diffusion-model, --llm, --vae.
#include "models/flux2.h"
#include "base/error.h"
#include "conditioners/dit_text.h"
#include "conditioners/llm_text_conditioner.h"
#include "families/parts/kl_vae.h"

namespace sd {

extern const Family kFlux2Family;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kLlm = "text_encoders.llm.";
constexpr int64_t kVaeChannels = 32;

bool is_dev(const ModelFiles& f);

// FLUX.2 shares its modulations across blocks; dev has all 48 single blocks (the reference's
// test: klein has fewer).
std::string detect(const ModelFiles& f) {
    if (!f.find(kDm + "double_stream_modulation_img.lin.weight")) return "";
    return is_dev(f) ? "FLUX.2-dev" : "FLUX.2-klein";
}

bool is_dev(const ModelFiles& f) {
    return f.has_prefix(kDm + "single_blocks.47.");
}

const LlmPromptTemplate kKleinPrompt{"<|im_start|>user\n",
                                     "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
                                     {9, 18, 27},
                                     0,
                                     512};

// The reference's system prompt for FLUX.2-dev (with its line break).
const LlmPromptTemplate kDevPrompt{
    "[SYSTEM_PROMPT]You are an AI that reasons about image descriptions. You give structured "
    "responses focusing on object relationships, object\nattribution and actions without "
    "speculation.[/SYSTEM_PROMPT][INST]",
    "[/INST]",
    {10, 20, 30},
    0,
    0,
    512};

// Mistral-Small-3.2 as the reference runs it: 128-wide heads, RMS eps 1e-5, rope theta 1e9
// (a llama.cpp GGUF's metadata says the same).
LlmOptions mistral_options() {
    LlmOptions o;
    o.head_dim = 128;
    o.rope_theta = 1e9f;
    o.eps = 1e-5f;
    return o;
}

class Flux2DiffusionModel : public DiffusionModel {
  public:
    explicit Flux2DiffusionModel(Flux2Model model) : model_(std::move(model)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for FLUX.2 models");
        return model_.forward(x, timesteps, c.context, c.guidance, c.ref_latents);
    }
    int64_t in_channels() const override { return model_.config().in_channels; }
    // Sizes align to the latent factor (16) alone.
    int64_t down_factor() const override { return 1; }
    CacheTarget cache_target() const override { return CacheTarget::DiT; }
    void release_weights() const override { model_.release_weights(); }
    size_t weight_bytes() const override { return model_.weight_pages().bytes(); }
    const Flux2Model& model() const { return model_; }

  private:
    Flux2Model model_;
};

// The LLM file is named with --llm when it holds a vision-language model or states of
// another width than the DiT's txt_in reads (3 of its hidden states).
void check_llm(const ModelFiles& files, const LlmConfig& llm, int64_t context_dim, bool dev) {
    const std::string file = files.source_of(first_with(files, kLlm));
    const char* variant = dev ? "FLUX.2-dev" : "FLUX.2-klein";
    SD_CHECK(!files.has_prefix(kLlm + "visual."),
             "--llm %s holds a vision-language model (visual.* tensors); %s takes %s there",
             file.c_str(), variant, dev ? "Mistral-Small-3.2's text model" : "Qwen3");
    SD_CHECK(3 * llm.width == context_dim,
             "--llm %s is an LLM %lld wide; this %s model reads 3 hidden states of %lld (its "
             "txt_in takes %lld)%s",
             file.c_str(), (long long)llm.width, variant, (long long)(context_dim / 3),
             (long long)context_dim,
             dev ? ": FLUX.2-dev takes Mistral-Small-3.2-24B (5120 wide)" : "");
}

void check_vae(const ModelFiles& files, const LatentCodec* codec) {
    const auto* vae = dynamic_cast<const KlVaeCodec*>(codec);
    SD_CHECK(vae && vae->vae().config().z_channels == kVaeChannels,
             "%s: the VAE has %lld latent channels; FLUX.2's has 32 (flux2 ae.safetensors)",
             files.describe_sources().c_str(),
             vae ? (long long)vae->vae().config().z_channels : 0LL);
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    const bool dev = is_dev(files);
    auto dit = std::make_unique<Flux2DiffusionModel>(
        Flux2Model::load(Weights(files, kDm, options.memory.residency)));
    if (!files.has_prefix(kLlm)) fail_missing_role(files, kFlux2Family, ModelRole::Llm);
    Llm llm = load_llm_encoder(files, options, kLlm, dev ? mistral_options() : LlmOptions{});
    check_llm(files, llm.config(), dit->model().config().context_dim, dev);
    ModelComponents m;
    m.conditioner = std::make_unique<LlmTextConditioner>(
        find_llm_vocabulary(files, options, kLlm, dev ? mistral_vocabulary() : qwen2_vocabulary()),
        std::move(llm), dev ? kDevPrompt : kKleinPrompt);
    m.diffusion = std::move(dit);
    m.codec = load_kl_vae(files, options, /*sample_posterior=*/false);
    check_vae(files, m.codec.get());
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLUX_FLOW_PRED), 1.0f);
    m.ref_images = {true, "flux2", 16};
    m.shift_from_tokens = true;
    return m;
}

// The reference's fixed statistics of the 128 patched latent channels (channel c * 4 + i * 2 +
// j: VAE channel c, patch row i, column j).
constexpr float kFlux2Mean[128] = {
    -0.0676f, -0.0715f, -0.0753f, -0.0745f, 0.0223f,  0.0180f,  0.0142f,  0.0184f,  -0.0001f,
    -0.0063f, -0.0002f, -0.0031f, -0.0272f, -0.0281f, -0.0276f, -0.0290f, -0.0769f, -0.0672f,
    -0.0902f, -0.0892f, 0.0168f,  0.0152f,  0.0079f,  0.0086f,  0.0083f,  0.0015f,  0.0003f,
    -0.0043f, -0.0439f, -0.0419f, -0.0438f, -0.0431f, -0.0102f, -0.0132f, -0.0066f, -0.0048f,
    -0.0311f, -0.0306f, -0.0279f, -0.0180f, 0.0030f,  0.0015f,  0.0126f,  0.0145f,  0.0347f,
    0.0338f,  0.0337f,  0.0283f,  0.0020f,  0.0047f,  0.0047f,  0.0050f,  0.0123f,  0.0081f,
    0.0081f,  0.0146f,  0.0681f,  0.0679f,  0.0767f,  0.0732f,  -0.0462f, -0.0474f, -0.0392f,
    -0.0511f, -0.0528f, -0.0477f, -0.0470f, -0.0517f, -0.0317f, -0.0316f, -0.0345f, -0.0283f,
    0.0510f,  0.0445f,  0.0578f,  0.0458f,  -0.0412f, -0.0458f, -0.0487f, -0.0467f, -0.0088f,
    -0.0106f, -0.0088f, -0.0046f, -0.0376f, -0.0432f, -0.0436f, -0.0499f, 0.0118f,  0.0166f,
    0.0203f,  0.0279f,  0.0113f,  0.0129f,  0.0016f,  0.0072f,  -0.0118f, -0.0018f, -0.0141f,
    -0.0054f, -0.0091f, -0.0138f, -0.0145f, -0.0187f, 0.0323f,  0.0305f,  0.0259f,  0.0300f,
    0.0540f,  0.0614f,  0.0495f,  0.0590f,  -0.0511f, -0.0603f, -0.0478f, -0.0524f, -0.0227f,
    -0.0274f, -0.0154f, -0.0255f, -0.0572f, -0.0565f, -0.0518f, -0.0496f, 0.0116f,  0.0054f,
    0.0163f,  0.0104f};
constexpr float kFlux2Std[128] = {
    1.8029f, 1.7786f, 1.7868f, 1.7837f, 1.7717f, 1.7590f, 1.7610f, 1.7479f, 1.7336f, 1.7373f,
    1.7340f, 1.7343f, 1.8626f, 1.8527f, 1.8629f, 1.8589f, 1.7593f, 1.7526f, 1.7556f, 1.7583f,
    1.7363f, 1.7400f, 1.7355f, 1.7394f, 1.7342f, 1.7246f, 1.7392f, 1.7304f, 1.7551f, 1.7513f,
    1.7559f, 1.7488f, 1.8449f, 1.8454f, 1.8550f, 1.8535f, 1.8240f, 1.7813f, 1.7854f, 1.7945f,
    1.8047f, 1.7876f, 1.7695f, 1.7676f, 1.7782f, 1.7667f, 1.7925f, 1.7848f, 1.7579f, 1.7407f,
    1.7483f, 1.7368f, 1.7961f, 1.7998f, 1.7920f, 1.7925f, 1.7780f, 1.7747f, 1.7727f, 1.7749f,
    1.7526f, 1.7447f, 1.7657f, 1.7495f, 1.7775f, 1.7720f, 1.7813f, 1.7813f, 1.8162f, 1.8013f,
    1.8023f, 1.8033f, 1.7527f, 1.7331f, 1.7563f, 1.7482f, 1.7610f, 1.7507f, 1.7681f, 1.7613f,
    1.7665f, 1.7545f, 1.7828f, 1.7726f, 1.7896f, 1.7999f, 1.7864f, 1.7760f, 1.7613f, 1.7625f,
    1.7560f, 1.7577f, 1.7783f, 1.7671f, 1.7810f, 1.7799f, 1.7201f, 1.7068f, 1.7265f, 1.7091f,
    1.7793f, 1.7578f, 1.7502f, 1.7455f, 1.7587f, 1.7500f, 1.7525f, 1.7362f, 1.7616f, 1.7572f,
    1.7444f, 1.7430f, 1.7509f, 1.7610f, 1.7634f, 1.7612f, 1.7254f, 1.7135f, 1.7321f, 1.7226f,
    1.7664f, 1.7624f, 1.7718f, 1.7664f, 1.7457f, 1.7441f, 1.7569f, 1.7530f};

}  // namespace

// The DiT's input, conditioning and output layers stay in their own dtype in -M convert.
constexpr const char* kFlux2ConvertKeeps[] = {"img_in.", "txt_in.", "time_in.", "guidance_in.",
                                              "final_layer."};

constexpr RoleUse kFlux2Roles[] = {
    {ModelRole::DiffusionModel, true},
    {ModelRole::Llm, true, "Qwen3 (klein) or Mistral-Small-3.2 (dev) text encoder"},
    {ModelRole::Vae, true, nullptr, "flux2 ae.safetensors: "}};

// Defaults as the reference's: euler on the flux2 schedule.
extern const Family kFlux2Family{"FLUX.2",
                                 detect,
                                 {EULER_SAMPLE_METHOD, FLUX2_SCHEDULER},
                                 {128, 16, 1.0f, 0.0f, {}, kFlux2Mean, kFlux2Std, 2},
                                 assemble,
                                 {},
                                 kFlux2ConvertKeeps,
                                 kFlux2Roles,
                                 "FLUX.2-klein 4B / 9B, FLUX.2-dev"};

}  // namespace sd
