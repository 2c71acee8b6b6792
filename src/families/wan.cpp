// Wan 2.1 text-to-video (T2V 1.3B and 14B), as stable-diffusion.cpp runs it:
//   text: UMT5-XXL (the T5 encoder with a position bias in every block) on the prompt's ids
//         then </s>, padded with <pad> to windows of 512 that its attention skips; the states
//         after </s> set to zero (the original Wan keeps the prompt's tokens and pads with
//         zeros), the negative prompt the same way;
//   model: the Wan DiT (models/wan.h) on the video latent [1, 16, T, h, w], predicting the flow
//         velocity (FLOW_PRED, shift 5 unless --flow-shift says otherwise); euler on the
//         discrete schedule by default; an image is a one-frame video;
//   latent: the Wan 2.1 VAE (families/parts/wan_vae_codec.h), 8x in space and 4x in time, each
//         of its 16 channels normalised by Wan's mean and std.
// Files: --diffusion-model, --t5xxl (UMT5-XXL), --vae.
#include "models/wan.h"

#include <string>

#include "base/error.h"
#include "conditioners/dit_text.h"
#include "families/parts/wan_vae_codec.h"
#include "models/t5_encoder.h"
#include "tokenizer/t5_tokenizer.h"

namespace sd {

extern const Family kWanFamily;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kT5 = "text_encoders.t5xxl.transformer.";
constexpr size_t kTextWindow = 512;  // the reference's text_len

std::string detect(const ModelFiles& f) {
    if (!f.has_prefix(kDm + "blocks.0.cross_attn.") && !f.has_prefix(kDm + "blocks.0.self_attn."))
        return "";
    return f.has_prefix(kDm + "img_emb.") ? "Wan image-to-video" : "Wan";
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

class WanDiffusionModel : public DiffusionModel {
  public:
    explicit WanDiffusionModel(WanModel model) : model_(std::move(model)) {}

    using DiffusionModel::forward;
    // A video's latent [1, C, T, h, w]; an image's [1, C, h, w] runs as one frame.
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for Wan models");
        if (x.dim() == 5) return model_.forward(x, timesteps, c.context);
        const Tensor video = x.view({x.size(0), x.size(1), 1, x.size(2), x.size(3)});
        const Tensor out = model_.forward(video, timesteps, c.context);
        return out.view({out.size(0), out.size(1), out.size(3), out.size(4)});
    }
    int64_t in_channels() const override { return model_.config().in_channels; }
    int64_t down_factor() const override { return 2; }  // the 2x2 patches
    void release_weights() const override { model_.release_weights(); }
    size_t weight_bytes() const override { return model_.weight_pages().bytes(); }

  private:
    WanModel model_;
};

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

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    SD_CHECK(!files.has_prefix(kDm + "img_emb."),
             "%s: a Wan image-to-video model (img_emb: it reads a CLIP-vision embedding of "
             "the first frame); this build runs Wan text-to-video models",
             files.describe_sources().c_str());
    check_umt5(files);
    const Residency residency = options.memory.residency;
    ModelComponents m;
    m.video = true;
    m.diffusion =
        std::make_unique<WanDiffusionModel>(WanModel::load(Weights(files, kDm, residency)));
    m.conditioner =
        std::make_unique<WanConditioner>(find_t5_vocabulary(files, options, /*umt5=*/true),
                                         T5Encoder::load(Weights(files, kT5, residency)));
    m.codec = load_wan_vae(files, options);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLOW_PRED), 5.0f);
    return m;
}

}  // namespace

constexpr RoleUse kWanRoles[] = {{ModelRole::DiffusionModel, true},
                                 {ModelRole::T5, true, "UMT5-XXL text encoder"},
                                 {ModelRole::Vae, true, "Wan 2.1 VAE"}};

// Defaults as the reference's for its flow models: euler on the discrete schedule.
extern const Family kWanFamily{"Wan",
                               detect,
                               {EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER},
                               {16, 8, 1.0f, 0.0f, {}, kWan21LatentMean, kWan21LatentStd, 1},
                               assemble,
                               {},
                               {},  // -M convert's rules for it: not set yet
                               kWanRoles,
                               "Wan 2.1 T2V 1.3B / 14B"};

}  // namespace sd
