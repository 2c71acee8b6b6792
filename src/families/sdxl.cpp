// Stable Diffusion XL (base, inpaint, and the smaller SDXL-layout UNets such as SSD-1B and
// Vega, whose depths the UNet reads from the weights), as sgm's DiffusionEngine and
// stable-diffusion.cpp run it:
//   text: CLIP ViT-L/14 and OpenCLIP ViT-bigG/14, both at the penultimate layer without the
//         final layer norm, their states concatenated (768 + 1280 = 2048 wide); bigG sees 0
//         after each window's end token.
//   y:    bigG's pooled output (final norm, end token, text projection; 1280) followed by
//         the sinusoidal embeddings (256 each) of the original size (h, w), the crop
//         (top, left) = (0, 0) and the target size (h, w): 2816 values into label_emb.
//   An empty negative prompt gives a zero context (its y is kept), as the reference does.
//   UNet predicting eps; KL VAE at scale 0.13025.
#include "base/error.h"
#include "conditioners/clip_text_conditioner.h"
#include "families/latent_rgb.h"
#include "families/parts/unet.h"
#include "ops/ops.h"

namespace sd {
namespace {

constexpr int64_t kSizeEmbedding = 256;

std::string detect(const ModelFiles& files) {
    if (!unet_has_label_emb(files)) return "";
    const int64_t context = unet_context_dim(files);
    if (context != 2048) return "";  // 1280: the refiner (not_built.cpp)
    switch (unet_in_channels(files)) {
        case 9:
            return "SDXL inpaint";
        case 8:
            return "SDXL instruct-pix2pix";
        default:
            return "SDXL";
    }
}

class SdxlConditioner : public Conditioner {
  public:
    explicit SdxlConditioner(TextConditioner text) : text_(std::move(text)) {}

    Conditioning encode(const ConditionRequest& r) const override {
        TextEncoding e = text_.encode(r.prompt, r.clip_skip);
        SD_CHECK(e.pooled.defined(), "SDXL conditioner: the bigG encoder gave no pooled output");
        Conditioning c;
        c.context = r.negative && r.prompt.empty() ? Tensor::zeros(e.context.shape()) : e.context;
        const float h = static_cast<float>(r.height), w = static_cast<float>(r.width);
        Tensor sizes = Tensor::from_vector({6}, {h, w, 0.0f, 0.0f, h, w});
        Tensor size_embeds =
            timestep_embedding(sizes, kSizeEmbedding).view({1, 6 * kSizeEmbedding});
        c.vector = concat({e.pooled, size_embeds}, 1);
        return c;
    }
    size_t count_tokens(const std::string& prompt) const override {
        return text_.count_tokens(prompt);
    }
    void release_weights() const override { text_.release_weights(); }

  private:
    TextConditioner text_;
};

ModelComponents assemble(const ModelFiles& files, const LoadOptions& options) {
    ModelComponents m;
    std::vector<ClipBranch> branches;
    branches.push_back({load_clip_text_encoder(files, options, "cond_stage_model.transformer."),
                        /*final_norm=*/false});
    branches.push_back(
        {load_clip_text_encoder(files, options, "cond_stage_model.1.transformer.", true),
         /*final_norm=*/false, /*zero_after_end=*/true, /*pooled=*/true});
    m.conditioner = std::make_unique<SdxlConditioner>(make_text_conditioner(
        files, options, std::move(branches), ClipTokenizer::kEndOfTextId, /*clip_skip=*/2));
    auto unet = load_unet(files, options);
    // y = pooled + six size embeddings must fill label_emb's input.
    const int64_t projection =
        files.get("cond_stage_model.1.transformer.text_projection.weight").shape[0];
    const int64_t adm = unet->unet().config().adm_in_channels;
    SD_CHECK(projection + 6 * kSizeEmbedding == adm,
             "SDXL: the bigG text projection gives %lld values and the size embeddings %lld, but "
             "the UNet's label_emb.0.0.weight takes %lld; 'text_projection' or 'label_emb' has an "
             "odd shape",
             (long long)projection, (long long)(6 * kSizeEmbedding), (long long)adm);
    add_unet_and_vae(m, std::move(unet), files, options, "SDXL");
    m.denoiser = make_denoiser(resolve_prediction(options.prediction, EPS_PRED));
    m.ays_table = AysTable::Sdxl;
    return m;
}

}  // namespace

constexpr RoleUse kSdxlRoles[] = {
    {ModelRole::DiffusionModel, true},
    {ModelRole::TextEncoder, true, nullptr, "in the checkpoint, or "},
    {ModelRole::TextEncoder2, true, nullptr, "in the checkpoint, or "},
    {ModelRole::Vae, true}};

extern const Family kSdxlFamily{"SDXL",
                                detect,
                                {},
                                {4, 8, 0.13025f, 0.0f, kSdxlRgb},
                                assemble,
                                {},
                                kUnetConvertKeeps,
                                kSdxlRoles,
                                "SDXL base 1.0, Turbo, Lightning, SSD-1B, Vega, SDXL inpaint"};

}  // namespace sd
