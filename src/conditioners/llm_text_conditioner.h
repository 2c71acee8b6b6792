// Text conditioning by a decoder-only LLM (Qwen3, Qwen2.5-VL, Mistral, ...), as the reference's
// LLMEmbedder: the prompt put into the family's chat template, the user's text weighted by the
// attention syntax (each piece tokenized on its own, as the reference does), the LLM's hidden
// states of the layers the family takes, token weights applied with the mean restored, the
// template's leading tokens dropped. One conditioner for every LLM family; what differs between
// them is an LlmPromptTemplate, declared beside the family.
#pragma once

#include <string>
#include <vector>

#include "models/llm.h"
#include "pipeline/components.h"
#include "pipeline/load_options.h"
#include "tokenizer/qwen2_tokenizer.h"

namespace sd {

struct LlmPromptTemplate {
    std::string prefix;           // before the user's text ("<|im_start|>user\n")
    std::string suffix;           // after it
    std::vector<int> out_layers;  // the hidden states taken (Llm::forward's numbering)
    int drop_front = 0;           // template tokens dropped from the states' front
    // When > 0, the ids are padded to this many with the vocabulary's pad id (FLUX.2-klein:
    // 512) and the padding is masked out of the keys (the reference's max_length).
    int pad_to = 0;
};

class LlmTextConditioner : public Conditioner {
  public:
    LlmTextConditioner(Qwen2Tokenizer tokenizer, Llm llm, LlmPromptTemplate prompt_template);

    Conditioning encode(const ConditionRequest& request) const override;
    size_t count_tokens(const std::string& prompt) const override;
    void release_weights() const override { llm_.release_weights(); }

    // The template's token ids and weights for `prompt` (what encode() runs the LLM on,
    // before any padding).
    void tokenize(const std::string& prompt, std::vector<int32_t>& ids,
                  std::vector<float>& weights) const;
    const Llm& llm() const { return llm_; }

  private:
    Qwen2Tokenizer tokenizer_;
    Llm llm_;
    LlmPromptTemplate template_;
};

// The Qwen2 vocabulary of the LLM in `files` under `llm_prefix` (--tokenizer-dir, the LLM's
// folder, its GGUF metadata, the model's); an error names the LLM's file with --llm.
Qwen2Tokenizer find_llm_vocabulary(const ModelFiles& files, const LoadOptions& options,
                                   const std::string& llm_prefix);

// The LLM under `llm_prefix` (which the files must have); an error names its file with --llm.
Llm load_llm_encoder(const ModelFiles& files, const LoadOptions& options,
                     const std::string& llm_prefix);

}  // namespace sd
