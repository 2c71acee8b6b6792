#include "conditioners/dit_text.h"

#include <algorithm>
#include <cmath>

#include "conditioners/prompt_weighting.h"

namespace sd {

WeightedIds weighted_ids(const std::string& prompt,
                         const std::function<std::vector<int32_t>(const std::string&)>& encode) {
    std::vector<WeightedText> pieces = parse_prompt_attention(prompt);
    if (pieces.empty()) pieces.push_back({"", 1.0f, false});
    WeightedIds out;
    for (const WeightedText& piece : pieces) {
        const std::vector<int32_t> ids = encode(piece.is_break ? "BREAK" : piece.text);
        out.ids.insert(out.ids.end(), ids.begin(), ids.end());
        out.weights.insert(out.weights.end(), ids.size(), piece.is_break ? -1.0f : piece.weight);
    }
    return out;
}

Tensor apply_token_weights(const Tensor& states, const std::vector<float>& weights) {
    if (std::all_of(weights.begin(), weights.end(), [](float w) { return w == 1.0f; }))
        return states;
    const int64_t n = states.size(1), width = states.size(2);
    std::vector<float> v = states.contiguous().to_vector();
    double before = 0, after = 0;
    for (float x : v) before += x;
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < width; ++j) v[i * width + j] *= weights[static_cast<size_t>(i)];
    }
    for (float x : v) after += x;
    const float total = static_cast<float>(v.size());
    const float mean0 = static_cast<float>(before) / total,
                mean1 = static_cast<float>(after) / total;
    if (std::isfinite(mean0) && std::isfinite(mean1) && mean1 != 0.0f) {
        for (float& x : v) x *= mean0 / mean1;
    }
    return Tensor::from_vector(states.shape(), v);
}

Tensor t5_window_states(const T5Tokenizer& tokenizer, const T5Encoder& t5,
                        const std::string& prompt, size_t window, std::vector<float>* keep,
                        bool mask_t5) {
    WeightedIds w =
        weighted_ids(prompt, [&](const std::string& t) { return tokenizer.encode(t); });  // </s>
    std::vector<float> mask;
    const std::vector<int32_t> ids = tokenizer.pad_windows(w.ids, window, &w.weights, &mask);
    std::vector<Tensor> windows;
    for (size_t at = 0; at + window <= ids.size(); at += window) {
        std::vector<float> bias;  // 0 or -inf a key
        if (mask_t5) {
            for (size_t i = at; i < at + window; ++i)
                bias.push_back(mask[i] > 0.0f ? 0.0f : -INFINITY);
        }
        const std::vector<float> weights(w.weights.begin() + at, w.weights.begin() + at + window);
        windows.push_back(apply_token_weights(
            t5.forward(std::span<const int32_t>(ids).subspan(at, window), bias), weights));
    }
    if (keep) *keep = std::move(mask);
    return windows.size() == 1 ? windows[0] : concat(windows, 1);
}

Tensor t5_key_mask(const std::vector<float>& keep, int attend_pads) {
    std::vector<float> mask(keep.size(), 0.0f);
    int opened = 0;
    for (size_t i = 0; i < keep.size(); ++i) {
        if (keep[i] > 0.0f) continue;
        if (opened < attend_pads) {
            ++opened;
        } else {
            mask[i] = -INFINITY;
        }
    }
    return Tensor::from_vector({static_cast<int64_t>(mask.size())}, mask);
}

std::string first_with(const ModelFiles& files, const std::string& prefix) {
    for (const std::string& n : files.names()) {
        if (n.compare(0, prefix.size(), prefix) == 0) return n;
    }
    return "";
}

T5Tokenizer find_t5_vocabulary(const ModelFiles& files, const LoadOptions& options, bool umt5) {
    T5TokenizerSearch search;
    search.umt5 = umt5;
    search.tokenizer_dir = options.tokenizer_dir;
    search.model_path = options.model_path;
    search.t5_path = files.source_of("text_encoders.t5xxl.transformer.shared.weight");
    for (const TensorFile& f : files.files()) {
        if (T5Tokenizer::gguf_has_vocab(f.metadata)) search.model_file = &f;
    }
    return find_t5_tokenizer(search);
}

}  // namespace sd
