#include "conditioners/llm_text_conditioner.h"

#include <algorithm>

#include "base/error.h"
#include "conditioners/dit_text.h"

namespace sd {

LlmTextConditioner::LlmTextConditioner(Qwen2Tokenizer tokenizer, Llm llm,
                                       LlmPromptTemplate prompt_template)
    : tokenizer_(std::move(tokenizer)),
      llm_(std::move(llm)),
      template_(std::move(prompt_template)) {}

void LlmTextConditioner::tokenize(const std::string& prompt, std::vector<int32_t>& ids,
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
    plain(template_.prefix);
    const WeightedIds user =
        weighted_ids(prompt, [&](const std::string& t) { return tokenizer_.encode(t); });
    append(user.ids, user.weights);
    plain(template_.suffix);
}

Conditioning LlmTextConditioner::encode(const ConditionRequest& r) const {
    std::vector<int32_t> ids;
    std::vector<float> weights;
    tokenize(r.prompt, ids, weights);
    SD_CHECK(static_cast<int64_t>(ids.size()) > template_.drop_front,
             "the prompt template gave %zu tokens; want more than the %d it drops", ids.size(),
             template_.drop_front);
    std::vector<float> key_mask;
    const size_t pad_to = static_cast<size_t>(std::max(template_.pad_to, 0));
    if (ids.size() < pad_to) {
        key_mask.assign(ids.size(), 1.0f);
        key_mask.resize(pad_to, 0.0f);
        ids.resize(pad_to, tokenizer_.pad_id());
        weights.resize(pad_to, 1.0f);
    }
    LlmInput input;
    input.key_mask = key_mask;
    Tensor states = apply_token_weights(llm_.forward(ids, template_.out_layers, input), weights);
    if (template_.drop_front > 0) {
        states = states.narrow(1, template_.drop_front, states.size(1) - template_.drop_front)
                     .contiguous();
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

Qwen2Tokenizer find_llm_vocabulary(const ModelFiles& files, const LoadOptions& options,
                                   const std::string& llm_prefix) {
    Qwen2TokenizerSearch search;
    search.tokenizer_dir = options.tokenizer_dir;
    search.model_path = options.model_path;
    search.llm_path = files.source_of(first_with(files, llm_prefix));
    // The LLM's own file is searched whatever its format (a safetensors file is named as
    // having no vocabulary); another file's GGUF metadata only when it carries one.
    for (const TensorFile& f : files.files()) {
        if (f.path == search.llm_path) {
            search.llm_file = &f;
        } else if (!search.model_file && Qwen2Tokenizer::gguf_has_vocab(f.metadata)) {
            search.model_file = &f;
        }
    }
    try {
        return find_qwen2_tokenizer(search);
    } catch (const Error& e) {
        fail("--llm %s: %s", search.llm_path.c_str(), e.what());
    }
}

Llm load_llm_encoder(const ModelFiles& files, const LoadOptions& options,
                     const std::string& llm_prefix) {
    try {
        const Weights w(files, llm_prefix, options.memory.residency);
        w.skip_all("visual.");  // a VL model's vision tower: its own part, not the text model's
        return Llm::load(w, llm_options(files));
    } catch (const Error& e) {
        fail("--llm %s: %s", files.source_of(first_with(files, llm_prefix)).c_str(), e.what());
    }
}

}  // namespace sd
