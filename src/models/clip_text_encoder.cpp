#include "models/clip_text_encoder.h"

#include <algorithm>

#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

ClipConfig read_config(const Weights& w) {
    ClipConfig c;
    auto tok = w.shape_of("embeddings.token_embedding.weight");
    auto pos = w.shape_of("embeddings.position_embedding.weight");
    auto fc1 = w.shape_of("encoder.layers.0.mlp.fc1.weight");
    SD_CHECK(tok && pos && fc1 && tok->size() == 2 && pos->size() == 2 && fc1->size() == 2,
             "no CLIP text encoder under '%s'", w.prefix().c_str());
    c.vocab = (*tok)[0];
    c.hidden = (*tok)[1];
    c.max_positions = (*pos)[0];
    c.intermediate = (*fc1)[0];
    c.layers = 0;
    while (w.has("encoder.layers." + std::to_string(c.layers) + ".mlp.fc1.weight")) ++c.layers;
    c.heads = c.hidden / 64;         // every CLIP text model of SD uses 64-wide heads
    c.quick_gelu = c.hidden == 768;  // OpenAI's ViT-L/14; OpenCLIP's H and bigG use GELU
    return c;
}

}  // namespace

ClipTextEncoder ClipTextEncoder::load(const Weights& w, const Weights* projection) {
    ClipTextEncoder m;
    m.config_ = read_config(w);
    const ClipConfig& c = m.config_;
    m.token_embedding = w["embeddings"]["token_embedding"].get("weight", {c.vocab, c.hidden});
    // Added to every activation, so kept in f32 whatever the file's dtype.
    m.position_embedding =
        convert(w["embeddings"]["position_embedding"].get("weight", {c.max_positions, c.hidden}),
                DType::F32);
    m.encoder_ = ClipEncoder::load(w["encoder"], c.layers, c.hidden, c.intermediate, c.heads,
                                   c.quick_gelu, /*causal=*/true);
    m.final_layer_norm = LayerNorm::load(w["final_layer_norm"], c.hidden, 1e-5f);
    if (projection) {
        auto shape = projection->shape_of("weight");
        SD_CHECK(shape && shape->size() == 2 && (*shape)[1] == c.hidden,
                 "text projection '%sweight': expected [projection, %lld], found %s",
                 projection->prefix().c_str(), (long long)c.hidden,
                 shape ? shape->to_string().c_str() : "nothing");
        m.text_projection = Linear::load(*projection, c.hidden, (*shape)[0], /*bias=*/false);
        projection->check("CLIP text projection");
    }
    w.check("CLIP text encoder");
    m.pages_ = w.pages();
    SD_LOG_INFO("CLIP text encoder: %lld layers, width %lld, %lld heads, %s", (long long)c.layers,
                (long long)c.hidden, (long long)c.heads, c.quick_gelu ? "quick GELU" : "GELU");
    return m;
}

Tensor ClipTextEncoder::embed_tokens(const Tensor& tokens, const Tensor& extra) const {
    Tensor ids = tokens.contiguous();
    const int64_t n = ids.numel();
    const int64_t extra_rows = extra.defined() ? extra.size(0) : 0;
    // Look up vocabulary ids in the table, then overwrite the rows of extra ids.
    Tensor clamped = ids.clone();
    int32_t* c = clamped.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
        SD_CHECK(c[i] >= 0 && c[i] < config_.vocab + extra_rows,
                 "token id %d outside the vocabulary", c[i]);
        if (c[i] >= config_.vocab) c[i] = 0;
    }
    Tensor x = embedding(token_embedding, clamped);
    const int32_t* raw = ids.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
        if (raw[i] < config_.vocab) continue;
        const float* src = extra.data<float>() + (raw[i] - config_.vocab) * config_.hidden;
        std::copy(src, src + config_.hidden, x.data<float>() + i * config_.hidden);
    }
    return x;
}

Tensor ClipTextEncoder::forward(const Tensor& tokens, int clip_skip, const Tensor& extra_embeddings,
                                bool final_norm) const {
    SD_CHECK(tokens.dim() == 2 && tokens.size(1) <= config_.max_positions,
             "CLIP tokens %s: expected [B, <= %lld]", tokens.describe().c_str(),
             (long long)config_.max_positions);
    SD_CHECK(clip_skip >= 1 && clip_skip <= config_.layers, "clip skip %d outside 1..%lld",
             clip_skip, (long long)config_.layers);
    const int64_t length = tokens.size(1);
    Tensor tok = extra_embeddings.defined() ? embed_tokens(tokens, extra_embeddings)
                                            : embedding(token_embedding, tokens);
    Tensor x = tok + position_embedding.narrow(0, 0, length).contiguous();
    const int64_t run = config_.layers - (clip_skip - 1);
    x = encoder_.forward(x, run);
    return final_norm ? final_layer_norm.forward(x) : x;
}

Tensor ClipTextEncoder::pooled(const Tensor& tokens, int64_t index) const {
    SD_CHECK(tokens.dim() == 2 && tokens.size(0) == 1 && index >= 0 && index < tokens.size(1),
             "pooled CLIP output: token %lld of %s", (long long)index, tokens.describe().c_str());
    Tensor x = forward(tokens, 1, {}, /*final_norm=*/true);  // [1, L, hidden]
    Tensor eot = x.narrow(1, index, 1).contiguous().view({1, config_.hidden});
    return text_projection ? text_projection->forward(eot) : eot;
}

}  // namespace sd
