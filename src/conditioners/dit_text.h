// Text-side helpers the DiT families (FLUX, Chroma, SD3) share: prompt pieces with their weights
// as token ids, the reference's token weighting of encoder states, T5's windows, and the T5
// vocabulary search.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "models/t5_encoder.h"
#include "pipeline/load_options.h"
#include "tokenizer/t5_tokenizer.h"

namespace sd {

// Token ids of a prompt and the attention weight of each.
struct WeightedIds {
    std::vector<int32_t> ids;
    std::vector<float> weights;
};

// The prompt's attention pieces (parse_prompt_attention; "BREAK" kept as a piece of its own
// with weight -1, as the reference's parser does) each tokenized by `encode`, joined.
WeightedIds weighted_ids(const std::string& prompt,
                         const std::function<std::vector<int32_t>(const std::string&)>& encode);

// The reference's apply_token_weights: states [1, n, width] times their tokens' weights,
// then scaled so that the mean over the window is what it was.
Tensor apply_token_weights(const Tensor& states, const std::vector<float>& weights);

// The reference's T5 context of FLUX and Chroma: the prompt's weighted ids padded to windows
// of `window` ids (T5Tokenizer::pad_windows), each window encoded and its states weighted
// (apply_token_weights), joined: [1, windows * window, width]. `keep` (when given) gets
// pad_windows' mask (1 for text and </s>, 0 for <pad>); with `mask_t5` the <pad>s are also
// hidden from T5's own attention (Chroma's chroma_use_t5_mask).
Tensor t5_window_states(const T5Tokenizer& tokenizer, const T5Encoder& t5,
                        const std::string& prompt, size_t window,
                        std::vector<float>* keep = nullptr, bool mask_t5 = false);

// The reference's key mask of T5 states for a DiT's attention (T5CLIPEmbedder's): f32 [n],
// 0 where `keep` (t5_window_states') is 1, -inf where 0, but for the first `attend_pads` of
// those, which stay 0 (modify_mask_to_attend_padding).
Tensor t5_key_mask(const std::vector<float>& keep, int attend_pads);

// The first tensor name under `prefix` ("" when none).
std::string first_with(const ModelFiles& files, const std::string& prefix);

// The T5 vocabulary (--tokenizer-dir, the model's folder, a GGUF's metadata, beside --t5xxl);
// with `umt5`, UMT5's (Wan's encoder).
T5Tokenizer find_t5_vocabulary(const ModelFiles& files, const LoadOptions& options,
                               bool umt5 = false);

}  // namespace sd
