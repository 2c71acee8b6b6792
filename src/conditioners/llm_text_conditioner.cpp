#include "conditioners/llm_text_conditioner.h"

#include <algorithm>

#include "base/cancel.h"
#include "base/error.h"
#include "base/log.h"
#include "conditioners/dit_text.h"
#include "ops/shape_ops.h"
#include "pipeline/image_tensor.h"

namespace sd {

LlmTextConditioner::LlmTextConditioner(LlmTokenizer tokenizer, Llm llm,
                                       LlmPromptTemplate prompt_template,
                                       std::optional<LlmVision> vision)
    : tokenizer_(std::move(tokenizer)),
      llm_(std::move(llm)),
      template_(std::move(prompt_template)),
      vision_(std::move(vision)) {}

void LlmTextConditioner::release_weights() const {
    llm_.release_weights();
    if (vision_) vision_->tower.release_weights();
}

void LlmTextConditioner::tokenize_parts(const std::string& prefix, const std::string& prompt,
                                        const std::string& suffix, std::vector<int32_t>& ids,
                                        std::vector<float>& weights) const {
    auto append = [&](const std::vector<int32_t>& piece, const std::vector<float>& w) {
        ids.insert(ids.end(), piece.begin(), piece.end());
        weights.insert(weights.end(), w.begin(), w.end());
    };
    auto plain = [&](const std::string& text) {
        const std::vector<int32_t> piece = tokenizer_.encode(text);
        append(piece, std::vector<float>(piece.size(), 1.0f));
    };
    ids.clear();
    weights.clear();
    if (tokenizer_.bos_id() >= 0) append({tokenizer_.bos_id()}, {1.0f});  // Mistral's <s>
    plain(prefix);
    const WeightedIds user =
        weighted_ids(prompt, [&](const std::string& t) { return tokenizer_.encode(t); });
    append(user.ids, user.weights);
    plain(suffix);
}

void LlmTextConditioner::tokenize(const std::string& prompt, std::vector<int32_t>& ids,
                                  std::vector<float>& weights) const {
    tokenize_parts(template_.prefix, prompt, template_.suffix, ids, weights);
}

void LlmTextConditioner::tokenize_with_pictures(const std::string& prompt,
                                                std::span<const int64_t> picture_tokens,
                                                std::vector<int32_t>& ids,
                                                std::vector<float>& weights,
                                                std::vector<int64_t>& picture_at) const {
    SD_CHECK(vision_, "reference images reached a text encoder without a vision tower");
    std::string prefix = vision_->prompt.prefix;
    for (size_t i = 0; i < picture_tokens.size(); ++i)
        prefix += vision_->picture(static_cast<int>(i) + 1, picture_tokens[i]);
    tokenize_parts(prefix, prompt, vision_->prompt.suffix, ids, weights);
    // Each picture's pad tokens, found where the tokenizer put them (the reference counts
    // fixed offsets, which agree for up to nine pictures).
    const int32_t pad = tokenizer_.id_of(vision_->pad_token);
    SD_CHECK(pad >= 0, "the LLM's vocabulary has no %s token", vision_->pad_token.c_str());
    picture_at.clear();
    for (size_t at = 0; at < ids.size();) {
        if (ids[at] != pad) {
            ++at;
            continue;
        }
        size_t end = at;
        while (end < ids.size() && ids[end] == pad) ++end;
        const size_t k = picture_at.size();
        SD_CHECK(k < picture_tokens.size() && static_cast<int64_t>(end - at) == picture_tokens[k],
                 "the prompt holds %s tokens of its own; remove them", vision_->pad_token.c_str());
        picture_at.push_back(static_cast<int64_t>(at));
        at = end;
    }
    SD_CHECK(picture_at.size() == picture_tokens.size(),
             "the vision template placed %zu of %zu pictures", picture_at.size(),
             picture_tokens.size());
}

Conditioning LlmTextConditioner::encode(const ConditionRequest& r) const {
    if (!r.images.empty()) return encode_with_images(r);
    std::vector<int32_t> ids;
    std::vector<float> weights;
    tokenize(r.prompt, ids, weights);
    return run(std::move(ids), std::move(weights), template_, {});
}

Conditioning LlmTextConditioner::encode_with_images(const ConditionRequest& r) const {
    SD_CHECK(vision_,
             "--ref-image: this text encoder reads no images (its LLM file has no vision tower)");
    std::vector<Tensor> embeds;
    std::vector<int64_t> counts;
    for (const image::Image& image : r.images) {
        embeds.push_back(tower_embeddings(image));
        counts.push_back(embeds.back().size(1));
    }
    std::vector<int32_t> ids;
    std::vector<float> weights;
    std::vector<int64_t> at;
    tokenize_with_pictures(r.prompt, counts, ids, weights, at);
    std::vector<LlmEmbedSplice> splices;
    for (size_t i = 0; i < embeds.size(); ++i) splices.push_back({at[i], embeds[i]});
    return run(std::move(ids), std::move(weights), vision_->prompt, splices);
}

Tensor LlmTextConditioner::tower_embeddings(const image::Image& image) const {
    const std::lock_guard<std::mutex> lock(tower_mutex_);
    for (const auto& [seen, embeds] : tower_cache_) {
        if (seen.width == image.width && seen.height == image.height &&
            seen.channels == image.channels && seen.pixels == image.pixels)
            return embeds;
    }
    const Qwen25VisionModel& tower = vision_->tower;
    const Tensor pixels = rgb_image_to_tensor(image);
    const auto [h, w] = qwen25_vision_size(pixels.size(2), pixels.size(3), tower.factor());
    SD_LOG_INFO("reference image %ux%u read by the vision tower at %lldx%lld", image.width,
                image.height, (long long)w, (long long)h);
    Tensor embeds = tower.forward(qwen25_vision_preprocess(pixels, h, w));
    cancellation_point();
    if (tower_cache_.size() >= 8) tower_cache_.clear();  // a request's references, not more
    tower_cache_.emplace_back(image, embeds);
    return embeds;
}

Conditioning LlmTextConditioner::run(std::vector<int32_t> ids, std::vector<float> weights,
                                     const LlmPromptTemplate& t,
                                     std::span<const LlmEmbedSplice> splices) const {
    SD_CHECK(static_cast<int64_t>(ids.size()) > t.drop_front,
             "the prompt template gave %zu tokens; want more than the %d it drops", ids.size(),
             t.drop_front);
    std::vector<float> key_mask;
    const size_t pad_to = static_cast<size_t>(std::max(t.pad_to, 0));
    if (ids.size() < pad_to) {
        key_mask.assign(ids.size(), 1.0f);
        key_mask.resize(pad_to, 0.0f);
        ids.resize(pad_to, tokenizer_.pad_id());
        weights.resize(pad_to, 1.0f);
    }
    LlmInput input;
    input.key_mask = key_mask;
    input.splices = splices;
    Tensor states = apply_token_weights(llm_.forward(ids, t.out_layers, input), weights);
    if (t.drop_front > 0)
        states = states.narrow(1, t.drop_front, states.size(1) - t.drop_front).contiguous();
    if (states.size(1) < t.zero_pad_to) {
        const Tensor zeros = Tensor::zeros({1, t.zero_pad_to - states.size(1), states.size(2)});
        states = concat({states, zeros}, 1);
    }
    Conditioning out;
    out.context = std::move(states);
    return out;
}

size_t LlmTextConditioner::count_tokens(const std::string& prompt) const {
    std::vector<int32_t> ids;
    std::vector<float> weights;
    tokenize(prompt, ids, weights);
    return ids.size();
}

LlmTokenizer find_llm_vocabulary(const ModelFiles& files, const LoadOptions& options,
                                 const std::string& llm_prefix, const LlmVocabulary& kind) {
    LlmTokenizerSearch search;
    search.kind = &kind;
    search.tokenizer_dir = options.tokenizer_dir;
    search.model_path = options.model_path;
    search.llm_path = files.source_of(first_with(files, llm_prefix));
    // The LLM's own file is searched whatever its format (a safetensors file is named as
    // having no vocabulary); another file's GGUF metadata only when it carries one.
    for (const TensorFile& f : files.files()) {
        if (f.path == search.llm_path) {
            search.llm_file = &f;
        } else if (!search.model_file && LlmTokenizer::gguf_has_vocab(f.metadata, kind)) {
            search.model_file = &f;
        }
    }
    try {
        return find_llm_tokenizer(search);
    } catch (const Error& e) {
        fail("--llm %s: %s", search.llm_path.c_str(), e.what());
    }
}

Llm load_llm_encoder(const ModelFiles& files, const LoadOptions& options,
                     const std::string& llm_prefix, const LlmOptions& defaults) {
    try {
        const Weights w(files, llm_prefix, options.memory.residency);
        w.skip_all("visual.");  // a VL model's vision tower: its own part, not the text model's
        LlmOptions o = llm_options(files);
        if (o.head_dim == 0) o.head_dim = defaults.head_dim;
        if (o.rope_theta <= 0) o.rope_theta = defaults.rope_theta;
        if (o.eps <= 0) o.eps = defaults.eps;
        return Llm::load(w, o);
    } catch (const Error& e) {
        fail("--llm %s: %s", files.source_of(first_with(files, llm_prefix)).c_str(), e.what());
    }
}

}  // namespace sd
