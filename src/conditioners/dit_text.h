// Text-side helpers the DiT families (FLUX, SD3) share: prompt pieces with their weights as
// token ids, the reference's token weighting of encoder states, and the T5 vocabulary search.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "io/model_files.h"
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

// The first tensor name under `prefix` ("" when none).
std::string first_with(const ModelFiles& files, const std::string& prefix);

// The T5 vocabulary (--tokenizer-dir, the model's folder, a GGUF's metadata, beside --t5xxl).
T5Tokenizer find_t5_vocabulary(const ModelFiles& files, const LoadOptions& options);

}  // namespace sd
