// Wan 2.1 text- and image-to-video (T2V, I2V, FLF2V), Wan2.2's I2V and TI2V-5B, as
// stable-diffusion.cpp runs them:
//   text: UMT5-XXL (the T5 encoder with a position bias in every block) on the prompt's ids
//         then </s>, padded with <pad> to windows of 512 that its attention skips; the states
//         after </s> set to zero (the original Wan keeps the prompt's tokens and pads with
//         zeros), the negative prompt the same way;
//   model: the Wan DiT (models/wan.h) on the video latent [1, C, T, h, w], predicting the flow
//         velocity (FLOW_PRED, shift 5 unless --flow-shift says otherwise); euler on the
//         discrete schedule by default; an image is a one-frame video;
//   latent: Wan 2.1: its VAE, 8x in space and 4x in time, 16 channels; Wan2.2 TI2V: the Wan 2.2
//         VAE, 16x in space, 48 channels (families/parts/wan_vae_codec.h); each channel
//         normalised by its VAE's mean and std;
//   TI2V's init image (-i) is the first latent frame, kept and seen at timestep 0;
//   Wan2.2 A14B: two experts, the high-noise one (--high-noise-diffusion-model) for the
//         schedule's steps above --moe-boundary (or --high-noise-steps), the other after;
//   image-to-video: a 4-channel frame mask and the latent of a grey clip holding the init
//         image first (and --end-img last) beside the noise (36 channels), and with img_emb
//         the CLIP-vision states of those frames (pipeline/extra_input.h).
// Files: --diffusion-model, --t5xxl (UMT5-XXL), --vae; --clip_vision (ViT-H) for img_emb;
// --high-noise-diffusion-model for Wan2.2 A14B.
#include "models/wan.h"

#include <string>

#include "base/error.h"
#include "conditioners/dit_text.h"
#include "families/latent_rgb.h"
#include "families/parts/wan_vae_codec.h"
#include "models/clip_vision_encoder.h"
#include "models/t5_encoder.h"
#include "pipeline/image_tensor.h"
#include "tokenizer/t5_tokenizer.h"

namespace sd {

extern const Family kWanFamily;
extern const Family kWan22Ti2vFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kHighNoiseDm = "model.high_noise_diffusion_model.";
const std::string kT5 = "text_encoders.t5xxl.transformer.";
const std::string kClipVision = "cond_stage_model.transformer.vision_model.";
constexpr size_t kTextWindow = 512;  // the reference's text_len
constexpr int64_t kTi2vChannels = 48;
// The DiT's activations as the image families' default; the VAE's decode holds far more.
constexpr ActivationFootprint kWanFootprint{2048, kWanDecodeBytesPerPixel};

// The DiT's latent input channels: 16 (Wan 2.1 / 2.2 T2V), 36 (image-to-video: noise, mask
// and the first frame's latent), 48 (Wan2.2 TI2V-5B); 0 when the files hold no Wan.
int64_t wan_in_channels(const ModelFiles& f) {
    if (!f.has_prefix(kDm + "blocks.0.cross_attn.") && !f.has_prefix(kDm + "blocks.0.self_attn."))
        return 0;
    const TensorRecord* patch = f.find(kDm + "patch_embedding.weight");
    return patch && patch->shape.size() == 5 ? patch->shape[1] : -1;
}

std::string detect(const ModelFiles& f) {
    const int64_t in = wan_in_channels(f);
    if (in == 0 || in == kTi2vChannels) return "";
    return f.has_prefix(kDm + "img_emb.") || in == 36 ? "Wan image-to-video" : "Wan";
}

std::string detect_ti2v(const ModelFiles& f) {
    return wan_in_channels(f) == kTi2vChannels ? "Wan2.2 TI2V" : "";
}

class WanConditioner : public Conditioner {
  public:
    WanConditioner(T5Tokenizer tokenizer, T5Encoder umt5)
        : tokenizer_(std::move(tokenizer)), umt5_(std::move(umt5)) {}

    Conditioning encode(const ConditionRequest& r) const override {
        std::vector<float> keep;
        Conditioning out;
        const Tensor states = t5_window_states(tokenizer_, umt5_, r.prompt, kTextWindow, &keep,
                                               /*mask_t5=*/true);
        // The padding's states are zeros (the reference's zero_out_masked).
        out.context = states * Tensor::from_vector({1, static_cast<int64_t>(keep.size()), 1}, keep);
        return out;
    }
    size_t count_tokens(const std::string& prompt) const override {
        return tokenizer_.encode(prompt).size();
    }
    void release_weights() const override { umt5_.release_weights(); }

  private:
    T5Tokenizer tokenizer_;
    T5Encoder umt5_;
};

// Wan I2V's image encoder: the CLIP-vision (ViT-H) hidden states of the first frame (FLF2V:
// of the first and then the last), as the reference's get_clip_vision_output(image, false,
// -2); a frame not given reads as zeros, as there.
class WanImageEncoder : public ImageEncoder {
  public:
    WanImageEncoder(ClipVisionEncoder clip, bool both_frames)
        : clip_(std::move(clip)), both_frames_(both_frames) {}

    Tensor encode(const std::optional<image::Image>& first,
                  const std::optional<image::Image>& last) const override {
        const Tensor states = frame_states(first);
        return both_frames_ ? concat({states, frame_states(last)}, 1) : states;
    }
    void release_weights() const override { clip_.release_weights(); }
    size_t weight_bytes() const override { return clip_.weight_pages().bytes(); }

  private:
    Tensor frame_states(const std::optional<image::Image>& frame) const {
        const ClipVisionConfig& c = clip_.config();
        if (!frame) return Tensor::zeros({1, c.positions, c.hidden});
        const Tensor pixels = clip_vision_preprocess(rgb_image_to_tensor(*frame), c.image_size);
        return clip_.forward(pixels, /*clip_skip=*/-2);
    }

    ClipVisionEncoder clip_;
    bool both_frames_;
};

class WanDiffusionModel : public DiffusionModel {
  public:
    explicit WanDiffusionModel(WanModel model) : model_(std::move(model)) {}

    using DiffusionModel::forward;
    // A video's latent [1, C, T, h, w]; an image's [1, C, h, w] runs as one frame.
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for Wan models");
        const WanVaceInput vace{c.control_video, c.control_video_strength};
        if (x.dim() == 5) return model_.forward(x, timesteps, c.context, c.image_states, vace);
        const Tensor video = x.view({x.size(0), x.size(1), 1, x.size(2), x.size(3)});
        const Tensor out = model_.forward(video, timesteps, c.context, c.image_states, vace);
        return out.view({out.size(0), out.size(1), out.size(3), out.size(4)});
    }
    int64_t in_channels() const override { return model_.config().in_channels; }
    int64_t down_factor() const override { return 2; }  // the 2x2 patches
    void release_weights() const override { model_.release_weights(); }
    size_t weight_bytes() const override { return model_.weight_pages().bytes(); }

  private:
    WanModel model_;
};

// Wan2.2 A14B's high-noise expert (--high-noise-diffusion-model): a Wan DiT that reads what the
// low-noise one (--diffusion-model) reads, the same latent channels and image input.
std::unique_ptr<DiffusionModel> load_high_noise_expert(const ModelFiles& files, Residency residency,
                                                       const WanConfig& low) {
    const std::string source = files.source_of(first_with(files, kHighNoiseDm));
    SD_CHECK(files.has_prefix(kHighNoiseDm + "blocks.0.self_attn."),
             "--high-noise-diffusion-model: %s holds no Wan DiT (no blocks.0.self_attn.*); it "
             "takes the high-noise expert of a Wan2.2 A14B pair",
             source.c_str());
    WanModel high = WanModel::load(Weights(files, kHighNoiseDm, residency));
    const WanConfig& c = high.config();
    SD_CHECK(c.in_channels == low.in_channels && c.out_channels == low.out_channels &&
                 c.image_input == low.image_input,
             "--high-noise-diffusion-model: %s is a Wan DiT of %lld input channels%s, the "
             "--diffusion-model one of %lld%s: the two experts of a Wan2.2 A14B pair read the "
             "same input (both text-to-video or both image-to-video)",
             source.c_str(), (long long)c.in_channels, c.image_input ? " with image input" : "",
             (long long)low.in_channels, low.image_input ? " with image input" : "");
    const bool vace = c.vace_layers > 0, low_vace = low.vace_layers > 0;
    SD_CHECK(vace == low_vace,
             "--high-noise-diffusion-model: %s is a Wan DiT %s VACE blocks, the --diffusion-model "
             "one %s: the two experts of a pair both take a control video or neither does",
             source.c_str(), vace ? "with" : "without", low_vace ? "with" : "without");
    return std::make_unique<WanDiffusionModel>(std::move(high));
}

// The text encoder file is named with --t5xxl when it holds no T5 or a plain T5 (no bias in its
// later blocks: not UMT5).
void check_umt5(const ModelFiles& files) {
    if (!files.has_prefix(kT5)) fail_missing_role(files, kWanFamily, ModelRole::T5);
    const std::string source = files.source_of(first_with(files, kT5));
    SD_CHECK(files.find(kT5 + "shared.weight") && files.has_prefix(kT5 + "encoder.block."),
             "--t5xxl: %s holds no T5 encoder (no shared.weight, encoder.block.N); Wan wants "
             "UMT5-XXL there",
             source.c_str());
    SD_CHECK(!files.has_prefix(kT5 + "encoder.block.1.") ||
                 files.find(kT5 + "encoder.block.1.layer.0.SelfAttention.relative_attention_bias."
                                  "weight"),
             "--t5xxl: %s is a T5 encoder (one position bias, in its first block); Wan's text "
             "encoder is UMT5-XXL, with one in every block (umt5-xxl-enc-bf16.safetensors)",
             source.c_str());
}

// The --vae file's latent channels are the family's: a Wan 2.1 VAE (16) for Wan 2.1 models
// and Wan 2.2's A14B, the Wan 2.2 VAE (48) for TI2V-5B.
void check_vae(const ModelFiles& files, const WanVaeCodec& codec, const Family& family) {
    const int64_t z = codec.vae().config().z;
    if (z == family.latent.channels) return;
    const std::string source = files.source_of(first_with(files, "first_stage_model."));
    const bool want22 = family.latent.channels == kTi2vChannels;
    fail("--vae: %s is a VAE of %lld latent channels; %s needs the Wan %s VAE (%lld: %s)",
         source.c_str(), (long long)z, family.name, want22 ? "2.2" : "2.1",
         (long long)family.latent.channels,
         want22 ? "wan2.2_vae.safetensors" : "wan_2.1_vae.safetensors");
}

// Image-to-video (Wan 2.1 I2V / FLF2V with img_emb, Wan2.2 I2V without): the frames condition
// the model through extra input channels and, with img_emb, the CLIP-vision states.
void assemble_image_to_video(const ModelFiles& files, const Residency residency,
                             const Family& family, ModelComponents& m) {
    m.video_init = VideoInit::Condition;
    m.extra_input = ExtraInput::FrameMaskAndClipLatent;
    if (!files.has_prefix(kDm + "img_emb.")) return;
    if (!files.has_prefix(kClipVision)) fail_missing_role(files, family, ModelRole::ClipVision);
    m.image_encoder = std::make_unique<WanImageEncoder>(
        ClipVisionEncoder::load(Weights(files, kClipVision, residency)),
        files.has_prefix(kDm + "img_emb.emb_pos"));
}

ModelComponents assemble_wan(const ModelFiles& files, const LoadOptions& options,
                             const Family& family) {
    check_umt5(files);
    const Residency residency = options.memory.residency;
    const bool image_to_video = files.has_prefix(kDm + "img_emb.") || wan_in_channels(files) == 36;
    ModelComponents m;
    m.video = true;
    if (&family == &kWan22Ti2vFamily) m.video_init = VideoInit::KeepFirstFrame;
    if (image_to_video) assemble_image_to_video(files, residency, family, m);
    WanModel low = WanModel::load(Weights(files, kDm, residency));
    m.control_video = low.config().vace_layers > 0;
    if (files.has_prefix(kHighNoiseDm))
        m.high_noise_diffusion = load_high_noise_expert(files, residency, low.config());
    m.diffusion = std::make_unique<WanDiffusionModel>(std::move(low));
    m.conditioner =
        std::make_unique<WanConditioner>(find_t5_vocabulary(files, options, /*umt5=*/true),
                                         T5Encoder::load(Weights(files, kT5, residency)));
    LoadOptions vae_options = options;
    // Image-to-video encodes its frames, VACE its control clip.
    vae_options.with_vae_encoder = options.with_vae_encoder || image_to_video || m.control_video;
    std::unique_ptr<WanVaeCodec> codec = load_wan_vae(files, vae_options);
    check_vae(files, *codec, family);
    m.codec = std::move(codec);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLOW_PRED), 5.0f);
    return m;
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    return assemble_wan(files, options, kWanFamily);
}

ModelComponents assemble_ti2v(const ModelFiles& files, const LoadOptions& options) {
    return assemble_wan(files, options, kWan22Ti2vFamily);
}

}  // namespace

constexpr RoleUse kWanRoles[] = {
    {ModelRole::DiffusionModel, true},
    {ModelRole::T5, true, "UMT5-XXL text encoder"},
    {ModelRole::Vae, true, "Wan 2.1 VAE"},
    {ModelRole::ClipVision, false, "CLIP-vision ViT-H image encoder (image-to-video)"},
    {ModelRole::HighNoiseDiffusionModel, false, "Wan2.2 A14B high-noise expert"}};
constexpr RoleUse kWan22Ti2vRoles[] = {{ModelRole::DiffusionModel, true},
                                       {ModelRole::T5, true, "UMT5-XXL text encoder"},
                                       {ModelRole::Vae, true, "Wan 2.2 VAE"}};

// Defaults as the reference's for its flow models: euler on the discrete schedule.
extern const Family kWanFamily{
    "Wan",
    detect,
    {EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER},
    {16, 8, 1.0f, 0.0f, kWan21Rgb, kWan21LatentMean, kWan21LatentStd, 1},
    assemble,
    kWanFootprint,
    {},  // -M convert: the reference tool's rules for every model (embeddings, biases kept)
    kWanRoles,
    "Wan 2.1 T2V, I2V, FLF2V and VACE 1.3B / 14B; Wan2.2 A14B T2V / I2V (two experts)"};

extern const Family kWan22Ti2vFamily{
    "Wan2.2 TI2V",
    detect_ti2v,
    {EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER},
    {kTi2vChannels, 16, 1.0f, 0.0f, kWan22Rgb, kWan22LatentMean, kWan22LatentStd, 1},
    assemble_ti2v,
    kWanFootprint,
    {},  // -M convert: the reference tool's rules for every model
    kWan22Ti2vRoles,
    "Wan2.2 TI2V 5B (text-to-video, and image-to-video with -i)"};

}  // namespace sd
