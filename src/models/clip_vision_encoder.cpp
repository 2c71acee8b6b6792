#include "models/clip_vision_encoder.h"

#include <cmath>

#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

constexpr const char* kModel = "CLIP vision encoder";

ClipVisionConfig read_config(const Weights& w, const ClipVisionOptions& options) {
    auto patch = w.shape_of("embeddings.patch_embedding.weight");
    auto pos = w.shape_of("embeddings.position_embedding.weight");
    auto fc1 = w.shape_of("encoder.layers.0.mlp.fc1.weight");
    SD_CHECK(patch && pos && fc1 && patch->size() == 4 && pos->size() == 2 && fc1->size() == 2,
             "no CLIP vision encoder under '%s' (embeddings.patch_embedding.weight, "
             "embeddings.position_embedding.weight, encoder.layers.0.mlp.fc1.weight)",
             w.prefix().c_str());
    ClipVisionConfig c;
    c.hidden = (*patch)[0];
    c.channels = (*patch)[1];
    c.patch = (*patch)[2];
    c.positions = (*pos)[0];
    c.intermediate = (*fc1)[0];
    c.layers = w.count_numbered("encoder.layers", "mlp.fc1.weight");
    const auto grid = static_cast<int64_t>(std::lround(std::sqrt(double(c.positions - 1))));
    SD_CHECK(c.positions > 1 && grid * grid == c.positions - 1 && (*patch)[3] == c.patch,
             "%s '%s': %lld positions are not a class token and a square of patches", kModel,
             w.prefix().c_str(), (long long)c.positions);
    c.image_size = grid * c.patch;
    c.heads = options.heads > 0                        ? options.heads
              : c.hidden <= 1024 && c.hidden % 64 == 0 ? c.hidden / 64
                                                       : 16;
    c.quick_gelu = options.quick_gelu.value_or(c.hidden <= 1024);
    SD_CHECK(c.hidden % c.heads == 0, "%s: width %lld does not split into %lld heads", kModel,
             (long long)c.hidden, (long long)c.heads);
    return c;
}

}  // namespace

ClipVisionEncoder ClipVisionEncoder::load(const Weights& w, const Weights* projection,
                                          const ClipVisionOptions& options) {
    ClipVisionEncoder m;
    m.config_ = read_config(w, options);
    const ClipVisionConfig& c = m.config_;
    const Weights emb = w["embeddings"];
    m.patch_embedding = Conv2d::load(emb["patch_embedding"], c.channels, c.hidden,
                                     static_cast<int>(c.patch), static_cast<int>(c.patch),
                                     /*padding=*/0, /*bias=*/false);
    m.class_embedding = emb.get("class_embedding", {c.hidden});
    // Added to every activation, so kept in f32 whatever the file's dtype.
    m.position_embedding =
        convert(emb["position_embedding"].get("weight", {c.positions, c.hidden}), DType::F32);
    emb.skip("position_ids");  // a buffer older transformers saved
    m.pre_layrnorm = LayerNorm::load(w["pre_layrnorm"], c.hidden, 1e-5f);
    m.encoder = ClipEncoder::load(w["encoder"], c.layers, c.hidden, c.intermediate, c.heads,
                                  c.quick_gelu, /*causal=*/false);
    m.post_layernorm = LayerNorm::load(w["post_layernorm"], c.hidden, 1e-5f);

    const Weights inner = w["visual_projection"];
    const Weights* proj = projection ? projection : inner.has("weight") ? &inner : nullptr;
    if (proj) {
        auto shape = proj->shape_of("weight");
        SD_CHECK(shape && shape->size() == 2 && (*shape)[1] == c.hidden,
                 "visual projection '%sweight': expected [projection, %lld], found %s",
                 proj->prefix().c_str(), (long long)c.hidden,
                 shape ? shape->to_string().c_str() : "nothing");
        m.config_.projection = (*shape)[0];
        m.visual_projection = Linear::load(*proj, c.hidden, (*shape)[0], /*bias=*/false);
        if (projection) projection->check("CLIP visual projection");
    }
    w.check(kModel);
    m.pages_ = w.pages();
    SD_LOG_INFO("%s: %lld layers, width %lld, %lld heads, %s, %lld px in %lld px patches%s", kModel,
                (long long)c.layers, (long long)c.hidden, (long long)c.heads,
                c.quick_gelu ? "quick GELU" : "GELU", (long long)c.image_size, (long long)c.patch,
                m.visual_projection ? ", projection" : "");
    return m;
}

Tensor ClipVisionEncoder::embed(const Tensor& pixels) const {
    const ClipVisionConfig& c = config_;
    SD_CHECK(pixels.defined() && pixels.dtype() == DType::F32 && pixels.dim() == 4 &&
                 pixels.size(1) == c.channels && pixels.size(2) == c.image_size &&
                 pixels.size(3) == c.image_size,
             "%s: pixels must be f32 [B, %lld, %lld, %lld], not %s", kModel, (long long)c.channels,
             (long long)c.image_size, (long long)c.image_size,
             pixels.defined() ? pixels.describe().c_str() : "undefined");
    const int64_t B = pixels.size(0), patches = c.positions - 1;
    // [B, hidden, g, g] -> [B, g g, hidden], the class token first.
    Tensor x = patch_embedding.forward(pixels).view({B, c.hidden, patches}).transpose(1, 2);
    Tensor cls = class_embedding.view({1, 1, c.hidden}).expand({B, 1, c.hidden}).contiguous();
    x = concat({cls, x.contiguous()}, 1);
    return pre_layrnorm.forward(x + position_embedding.view({1, c.positions, c.hidden}));
}

Tensor ClipVisionEncoder::forward(const Tensor& pixels, int clip_skip) const {
    const int64_t layers = config_.layers;
    SD_CHECK(clip_skip <= layers, "%s: clip skip %d of %lld layers", kModel, clip_skip,
             (long long)layers);
    const int64_t run = clip_skip > 0 ? layers - (clip_skip - 1) : layers;
    return encoder.forward(embed(pixels), run);
}

Tensor ClipVisionEncoder::pooled(const Tensor& pixels, int clip_skip) const {
    SD_CHECK(visual_projection.has_value(), "%s: no visual_projection.weight for a pooled output",
             kModel);
    const Tensor x = forward(pixels, clip_skip);  // [B, positions, hidden]
    const Tensor cls = x.narrow(1, 0, 1).contiguous().view({x.size(0), config_.hidden});
    return visual_projection->forward(post_layernorm.forward(cls));
}

Tensor clip_vision_preprocess(const Tensor& image, int64_t size) {
    return clip_image_preprocess(image, size, size, kModel);
}

}  // namespace sd
