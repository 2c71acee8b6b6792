// Text conditioning by a decoder-only LLM (Qwen3, Qwen2.5-VL, Mistral, ...), as the reference's
// LLMEmbedder: the prompt (and, with a vision tower, reference images) put into the family's
// chat template, the user's text weighted by the
// attention syntax (each piece tokenized on its own, as the reference does), the LLM's hidden
// states of the layers the family takes, token weights applied with the mean restored, the
// template's leading tokens dropped. One conditioner for every LLM family; what differs between
// them is an LlmPromptTemplate, declared beside the family.
#pragma once

#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/llm.h"
#include "models/qwen2_5_vl_vision.h"
#include "pipeline/components.h"
#include "pipeline/load_options.h"
#include "tokenizer/llm_tokenizer.h"

namespace sd {

struct LlmPromptTemplate {
    std::string prefix;           // before the user's text ("<|im_start|>user\n")
    std::string suffix;           // after it
    std::vector<int> out_layers;  // the hidden states taken (Llm::forward's numbering)
    int drop_front = 0;           // template tokens dropped from the states' front
    // When > 0, the ids are padded to this many with the vocabulary's pad id (FLUX.2-klein:
    // 512) and the padding is masked out of the keys (the reference's max_length).
    int pad_to = 0;
    // When > 0, the hidden states are padded with zero rows to at least this many, after the
    // LLM (FLUX.2-dev: 512; the reference's min_length).
    int zero_pad_to = 0;
};

// Reference images read with the prompt by a vision-language encoder (Qwen-Image-Edit, the
// reference's QwenImageEditPlusPipeline): each image sized for the tower (qwen25_vision_size),
// preprocessed as CLIP, encoded, and its embeddings spliced over the pad tokens of its picture
// text; the pictures' texts follow `prompt.prefix`, and `prompt` replaces the text template
// whenever a request has images.
struct LlmVision {
    Qwen25VisionModel tower;
    LlmPromptTemplate prompt;
    // The text of picture `number` (from 1) holding `tokens` copies of `pad_token`.
    std::string (*picture)(int number, int64_t tokens) = nullptr;
    std::string pad_token;
};

class LlmTextConditioner : public Conditioner {
  public:
    LlmTextConditioner(LlmTokenizer tokenizer, Llm llm, LlmPromptTemplate prompt_template,
                       std::optional<LlmVision> vision = std::nullopt);

    Conditioning encode(const ConditionRequest& request) const override;
    size_t count_tokens(const std::string& prompt) const override;
    void release_weights() const override;

    // The template's token ids and weights for `prompt` (what encode() runs the LLM on,
    // before any padding).
    void tokenize(const std::string& prompt, std::vector<int32_t>& ids,
                  std::vector<float>& weights) const;
    // The same under the vision template, picture i holding picture_tokens[i] pad tokens;
    // picture_at[i]: where its pad tokens start in `ids`. Throws without a vision tower.
    void tokenize_with_pictures(const std::string& prompt, std::span<const int64_t> picture_tokens,
                                std::vector<int32_t>& ids, std::vector<float>& weights,
                                std::vector<int64_t>& picture_at) const;
    const Llm& llm() const { return llm_; }
    bool reads_images() const { return vision_.has_value(); }

  private:
    void tokenize_parts(const std::string& prefix, const std::string& prompt,
                        const std::string& suffix, std::vector<int32_t>& ids,
                        std::vector<float>& weights) const;
    Conditioning encode_with_images(const ConditionRequest& request) const;
    // The tower's embeddings of `image`, reused while the same image comes again (guidance's
    // two sides read the same references).
    Tensor tower_embeddings(const image::Image& image) const;
    // The LLM on the template's ids: padded as `t` says, token weights applied, its leading
    // tokens dropped.
    Conditioning run(std::vector<int32_t> ids, std::vector<float> weights,
                     const LlmPromptTemplate& t, std::span<const LlmEmbedSplice> splices) const;

    LlmTokenizer tokenizer_;
    Llm llm_;
    LlmPromptTemplate template_;
    std::optional<LlmVision> vision_;
    mutable std::mutex tower_mutex_;
    mutable std::vector<std::pair<image::Image, Tensor>> tower_cache_;  // the last request's
};

// The vocabulary (of `kind`) of the LLM in `files` under `llm_prefix` (--tokenizer-dir, the
// LLM's folder, its GGUF metadata, the model's); an error names the LLM's file with --llm.
LlmTokenizer find_llm_vocabulary(const ModelFiles& files, const LoadOptions& options,
                                 const std::string& llm_prefix,
                                 const LlmVocabulary& kind = qwen2_vocabulary());

// The LLM under `llm_prefix` (which the files must have); an error names its file with --llm.
// `defaults` fill what the file's GGUF metadata does not give (Mistral's eps and theta).
Llm load_llm_encoder(const ModelFiles& files, const LoadOptions& options,
                     const std::string& llm_prefix, const LlmOptions& defaults = {});

}  // namespace sd
