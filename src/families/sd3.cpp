// Stable Diffusion 3 / 3.5 (SD3 medium, SD3.5 medium and large), as stable-diffusion.cpp runs
// them:
//   text: CLIP-L, OpenCLIP bigG and T5-XXL over 77-token windows (prompt-weighted, mean
//         restored); each window's CLIP-L and bigG penultimate states side by side, zero-padded
//         to T5's 4096 wide, then the window's T5 states after them in the sequence; the
//         vector is CLIP-L's pooled output (no projection) and bigG's projected pooled output
//         side by side (SD3CLIPEmbedder);
//   model: the MMDiT predicting the flow velocity (FLOW_PRED, shift 3.0), skip-layer
//          guidance by leaving joint blocks out;
//   latent: the 16-channel VAE (FLUX's layout) at scale 1.5305, shift 0.0609.
// Files: --diffusion-model, --vae, --clip_l, --clip_g, --t5xxl, or one file holding them all
// (model.diffusion_model.*, text_encoders.{clip_l,clip_g,t5xxl}.*, first_stage_model.*).
#include <algorithm>

#include "base/error.h"
#include "conditioners/clip_text_conditioner.h"
#include "conditioners/dit_text.h"
#include "families/parts/kl_vae.h"
#include "models/mmdit.h"
#include "models/t5_encoder.h"

namespace sd {

extern const Family kSd3Family;

namespace {

const std::string kDm = "model.diffusion_model.";
const std::string kClipL = "cond_stage_model.transformer.";
const std::string kClipG = "cond_stage_model.1.transformer.";
const std::string kT5 = "text_encoders.t5xxl.transformer.";
constexpr size_t kWindow = 77;
constexpr int64_t kContextWidth = 4096;
constexpr int kDefaultClipSkip = 2;

std::string detect(const ModelFiles& f) {
    if (!f.has_prefix(kDm + "joint_blocks.")) return "";
    if (!f.find(kDm + "joint_blocks.0.x_block.attn.ln_q.weight")) return "SD3 medium";
    return f.has_prefix(kDm + "joint_blocks.0.x_block.attn2.") ? "SD3.5 medium" : "SD3.5 large";
}

// One CLIP branch: its encoder (bigG with its text projection) and the id its windows are
// padded with (CLIP-L: the end token, bigG: 0).
struct Sd3Clip {
    ClipTextEncoder encoder;
    int32_t pad_id;
};

class Sd3Conditioner : public Conditioner {
  public:
    Sd3Conditioner(ClipTokenizer clip_tokenizer, Sd3Clip clip_l, Sd3Clip clip_g,
                   T5Tokenizer t5_tokenizer, T5Encoder t5)
        : tokenizer_(std::move(clip_tokenizer)),
          clip_l_(std::move(clip_l)),
          clip_g_(std::move(clip_g)),
          t5_tokenizer_(std::move(t5_tokenizer)),
          t5_(std::move(t5)) {}

    Conditioning encode(const ConditionRequest& r) const override {
        auto clip_encode = [&](const std::string& t) { return tokenizer_.encode(t); };
        WeightedIds l = weighted_ids(r.prompt, clip_encode), g = l;
        WeightedIds t5 =
            weighted_ids(r.prompt, [&](const std::string& t) { return t5_tokenizer_.encode(t); });
        l.ids = tokenizer_.pad_windows(l.ids, kWindow, clip_l_.pad_id, &l.weights);
        g.ids = tokenizer_.pad_windows(g.ids, kWindow, clip_g_.pad_id, &g.weights);
        t5.ids = t5_tokenizer_.pad_windows(t5.ids, kWindow, &t5.weights);
        const int clip_skip = r.clip_skip > 0 ? r.clip_skip : kDefaultClipSkip;
        const size_t windows = std::max({l.ids.size(), g.ids.size(), t5.ids.size()}) / kWindow;
        std::vector<Tensor> states;
        for (size_t i = 0; i < windows; ++i) {
            const Tensor lg = concat(
                {clip_states(clip_l_, l, i, clip_skip), clip_states(clip_g_, g, i, clip_skip)}, 2);
            states.push_back(pad_to_context(lg));
            states.push_back(t5_states(t5, i));
        }
        Conditioning out;
        out.context = concat(states, 1);
        out.vector = concat({pooled(clip_l_, l.ids), pooled(clip_g_, g.ids)}, 1);
        return out;
    }

    void release_weights() const override {
        clip_l_.encoder.release_weights();
        clip_g_.encoder.release_weights();
        t5_.release_weights();
    }

  private:
    static Tensor window_tokens(const std::vector<int32_t>& ids, size_t index) {
        Tensor tokens = Tensor::empty({1, static_cast<int64_t>(kWindow)}, DType::I32);
        std::copy(ids.begin() + index * kWindow, ids.begin() + (index + 1) * kWindow,
                  tokens.data<int32_t>());
        return tokens;
    }

    static std::vector<float> window_weights(const WeightedIds& w, size_t index) {
        return {w.weights.begin() + index * kWindow, w.weights.begin() + (index + 1) * kWindow};
    }

    // The penultimate (clip_skip) states of window `index` without the final norm, weighted;
    // zeros for a window past this encoder's tokens.
    static Tensor clip_states(const Sd3Clip& clip, const WeightedIds& w, size_t index,
                              int clip_skip) {
        const int64_t width = clip.encoder.config().hidden;
        if ((index + 1) * kWindow > w.ids.size())
            return Tensor::zeros({1, static_cast<int64_t>(kWindow), width});
        const Tensor states =
            clip.encoder.forward(window_tokens(w.ids, index), clip_skip, {}, /*final_norm=*/false);
        return apply_token_weights(states, window_weights(w, index));
    }

    Tensor t5_states(const WeightedIds& w, size_t index) const {
        if ((index + 1) * kWindow > w.ids.size())
            return Tensor::zeros({1, static_cast<int64_t>(kWindow), kContextWidth});
        const std::vector<int32_t> window(w.ids.begin() + index * kWindow,
                                          w.ids.begin() + (index + 1) * kWindow);
        return apply_token_weights(t5_.forward(window), window_weights(w, index));
    }

    // [1, 77, 2048] -> [1, 77, 4096], zeros on the right.
    static Tensor pad_to_context(const Tensor& lg) {
        const int64_t width = lg.size(2);
        SD_CHECK(width <= kContextWidth, "SD3: CLIP states of width %lld exceed T5's %lld",
                 (long long)width, (long long)kContextWidth);
        if (width == kContextWidth) return lg;
        return concat({lg, Tensor::zeros({1, lg.size(1), kContextWidth - width})}, 2);
    }

    // The pooled output of the first window: the end token's state after every layer and the
    // final norm (projected where the encoder has a projection): [1, width].
    Tensor pooled(const Sd3Clip& clip, const std::vector<int32_t>& ids) const {
        const auto begin = ids.begin(), end = ids.begin() + kWindow;
        const int64_t index = std::min<int64_t>(std::find(begin, end, tokenizer_.eos_id()) - begin,
                                                static_cast<int64_t>(kWindow) - 1);
        return clip.encoder.pooled(window_tokens(ids, 0), index);
    }

    ClipTokenizer tokenizer_;
    Sd3Clip clip_l_, clip_g_;
    T5Tokenizer t5_tokenizer_;
    T5Encoder t5_;
};

class Sd3DiffusionModel : public DiffusionModel {
  public:
    explicit Sd3DiffusionModel(MMDiT mmdit) : mmdit_(std::move(mmdit)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        SD_CHECK(!control, "ControlNet is not supported for SD3 models");
        return mmdit_.forward(x, timesteps, c.context, c.vector, c.skip_layers);
    }
    int64_t in_channels() const override { return mmdit_.config().in_channels; }
    int64_t down_factor() const override { return mmdit_.config().patch; }
    void release_weights() const override { mmdit_.release_weights(); }
    CacheTarget cache_target() const override { return CacheTarget::DiT; }
    size_t weight_bytes() const override { return mmdit_.weight_pages().bytes(); }
    bool can_skip_layers() const override { return true; }

  private:
    MMDiT mmdit_;
};

// Each text encoder SD3 needs, named with the option that gives it (the loader has checked
// that each role is there; here, that it holds the encoder).
void check_text_encoders(const ModelFiles& files) {
    const std::string token = "text_model.embeddings.token_embedding.weight";
    if (!files.find(kClipL + token)) fail_missing_role(files, kSd3Family, ModelRole::TextEncoder);
    if (!files.find(kClipG + token)) fail_missing_role(files, kSd3Family, ModelRole::TextEncoder2);
    SD_CHECK(files.find(kClipG + "text_projection.weight"),
             "%s: the bigG text encoder (--clip_g) has no text_projection.weight; SD3 needs "
             "CLIPTextModelWithProjection's",
             files.source_of(kClipG + token).c_str());
    if (!files.find(kT5 + "shared.weight") || !files.has_prefix(kT5 + "encoder.block."))
        fail_missing_role(files, kSd3Family, ModelRole::T5);
}

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    check_text_encoders(files);
    const Residency residency = options.memory.residency;
    ModelComponents m;
    m.diffusion = std::make_unique<Sd3DiffusionModel>(MMDiT::load(Weights(files, kDm, residency)));
    m.conditioner = std::make_unique<Sd3Conditioner>(
        find_model_tokenizer(files, options),
        Sd3Clip{load_clip_text_encoder(files, options, kClipL), ClipTokenizer::kEndOfTextId},
        Sd3Clip{load_clip_text_encoder(files, options, kClipG, /*with_projection=*/true), 0},
        find_t5_vocabulary(files, options), T5Encoder::load(Weights(files, kT5, residency)));
    m.codec = load_kl_vae(files, options);
    const auto* vae = dynamic_cast<const KlVaeCodec*>(m.codec.get());
    SD_CHECK(vae && vae->vae().config().z_channels == 16,
             "%s: the VAE has %lld latent channels; SD3's has 16", files.describe_sources().c_str(),
             vae ? (long long)vae->vae().config().z_channels : 0LL);
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, FLOW_PRED), 3.0f);
    return m;
}

}  // namespace

// The MMDiT's patch, position, timestep, pooled-vector and context embedders stay in their
// own dtype in -M convert.
constexpr const char* kMmditConvertKeeps[] = {"x_embedder.", "t_embedder.", "y_embedder.",
                                              "pos_embed", "context_embedder."};

constexpr RoleUse kSd3Roles[] = {{ModelRole::DiffusionModel, true},
                                 {ModelRole::TextEncoder, true},
                                 {ModelRole::TextEncoder2, true},
                                 {ModelRole::T5, true},
                                 {ModelRole::Vae, true}};

extern const Family kSd3Family{"SD3",
                               detect,
                               {EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER},
                               {16, 8, 1.5305f, 0.0609f, {}},
                               assemble,
                               {},
                               kMmditConvertKeeps,
                               kSd3Roles,
                               "SD3 medium, SD3.5 medium, large, large turbo"};

}  // namespace sd
