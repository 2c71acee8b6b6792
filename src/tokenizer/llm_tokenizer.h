// The byte-level BPE tokenizer of the LLM text encoders, producing the ids
// stable-diffusion.cpp produces: its own pre-tokenization (see README.md, it differs from
// Hugging Face's in a few places), special tokens split out of the text first. Two
// vocabularies (LlmVocabulary): Qwen2's (Qwen2.5, Qwen2.5-VL, Qwen3: Z-Image, Qwen-Image,
// FLUX.2-klein) and Mistral's tekken (Mistral-Small-3.2: FLUX.2-dev). The vocabulary comes from
// a Hugging Face tokenizer.json, vocab.json + merges.txt, Mistral's tekken.json, or GGUF
// metadata (llama.cpp's `tokenizer.ggml.*` keys, model "gpt2"); find_llm_tokenizer() looks
// for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor_file.h"

namespace sd {

// What tells one LLM vocabulary from another.
struct LlmVocabulary {
    const char* name;      // "Qwen2", "Mistral": in messages
    const char* gguf_pre;  // tokenizer.ggml.pre of its GGUF files ("qwen2", "tekken")
    const char* folder;    // its subfolder of --tokenizer-dir ("qwen2", "mistral")
    // Special tokens every source must have (the templates use them).
    std::vector<std::string> required;
    // The special tokens of a vocab.json + merges.txt, in id order: marked special where the
    // vocabulary has them, appended after it where not (Qwen2's vocab.json holds none);
    // the first `control_count` are control tokens, the rest user-defined.
    std::vector<std::string> specials;
    size_t control_count = 0;
    std::string eos, pad;
    std::string bos;       // put in front of every text by the conditioner; empty: none (Qwen2)
    bool builtin = false;  // the binary holds this vocabulary (builtin_vocabularies.h)
};
const LlmVocabulary& qwen2_vocabulary();
// Mistral's tekken: <unk> 0, <s> 1, </s> 2, [INST] 3, ... <pad> 11, ... [SYSTEM_PROMPT] 17,
// then <SPECIAL_20> ... <SPECIAL_999>; BOS <s> in front, as the reference's MistralTokenizer.
const LlmVocabulary& mistral_vocabulary();

class LlmTokenizer {
  public:
    // From a Hugging Face tokenizer.json (model type "BPE", byte-level, no end-of-word
    // suffix); its added_tokens are the special tokens recognised in text.
    static LlmTokenizer from_file(const std::string& path,
                                  const LlmVocabulary& kind = qwen2_vocabulary());
    static LlmTokenizer from_json_bytes(std::string_view json, const std::string& source,
                                        const LlmVocabulary& kind = qwen2_vocabulary());
    // From vocab.json + merges.txt: the vocabulary's specials (kind.specials) are marked, or
    // appended after the vocabulary where it lacks them (Qwen2's <|endoftext|>, <|im_start|>,
    // ... </think>), as the reference does.
    static LlmTokenizer from_vocab_merges(const std::string& vocab_json_path,
                                          const std::string& merges_txt_path,
                                          const LlmVocabulary& kind = qwen2_vocabulary());
    static LlmTokenizer from_vocab_merges_bytes(std::string_view vocab_json,
                                                std::string_view merges_txt,
                                                const std::string& source,
                                                const LlmVocabulary& kind = qwen2_vocabulary());
    // From Mistral's tekken.json (mistral_common's format: byte tokens by rank, base64, after
    // the special tokens; the merges are implied by the ranks and derived here).
    static LlmTokenizer from_tekken_file(const std::string& path);
    static LlmTokenizer from_tekken_json_bytes(std::string_view json, const std::string& source);
    // From GGUF metadata (keys in README.md); `source` names the file in error messages.
    static LlmTokenizer from_gguf_metadata(const std::map<std::string, MetadataValue>& metadata,
                                           const std::string& source,
                                           const LlmVocabulary& kind = qwen2_vocabulary());
    // Whether the metadata carries a byte-level BPE vocabulary that may be `kind`'s
    // (tokenizer.ggml.model "gpt2" with tokens, tokenizer.ggml.pre absent or kind.gguf_pre).
    static bool gguf_has_vocab(const std::map<std::string, MetadataValue>& metadata,
                               const LlmVocabulary& kind = qwen2_vocabulary());
    // The vocabulary as GGUF metadata (what from_gguf_metadata reads), for -M convert.
    std::map<std::string, MetadataValue> to_gguf_metadata() const;

    LlmTokenizer(LlmTokenizer&&) noexcept;
    LlmTokenizer& operator=(LlmTokenizer&&) noexcept;
    ~LlmTokenizer();

    // Ids of the raw text: no chat template, no BOS/EOS, no padding. Special tokens in the
    // text give their ids. Never fails on invalid UTF-8 (read as the reference reads it, see
    // README.md). Safe to call from several threads.
    std::vector<int32_t> encode(std::string_view text) const;
    // The text of `ids` (byte tokens decoded back to bytes, special tokens as written).
    // Throws sd::Error for an id outside the vocabulary.
    std::string decode(const std::vector<int32_t>& ids) const;

    // The id of a vocabulary entry as spelled in vocab.json ("Ġcat", "<|im_start|>"), or -1.
    int32_t id_of(std::string_view token) const;
    // The vocabulary entry of an id; throws sd::Error when out of range.
    const std::string& token(int32_t id) const;
    // Whether an id is a special token (recognised in text, never produced by BPE).
    bool is_special(int32_t id) const;

    // Qwen2: <|endoftext|> (151643) for both, as the reference; Mistral: </s> and <pad>.
    int32_t eos_id() const;
    int32_t pad_id() const;
    // The id put in front of a text (Mistral's <s>), or -1 (Qwen2).
    int32_t bos_id() const;
    const LlmVocabulary& kind() const;
    size_t vocab_size() const;
    size_t merge_count() const;

    struct Impl;

  private:
    explicit LlmTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Where to look for an LLM vocabulary, in this order; the first place that has one wins.
struct LlmTokenizerSearch {
    const LlmVocabulary* kind = &qwen2_vocabulary();
    std::string tokenizer_dir;  // --tokenizer-dir DIR: DIR/<kind.folder>/tokenizer.json,
                                // tekken.json (Mistral) or vocab.json + merges.txt
    bool use_env = true;        // SD_TOKENIZER_DIR, same layout as --tokenizer-dir
    std::string llm_path;       // the LLM file (--llm): its folder, tokenizer/ in or beside it
    std::string model_path;     // the model file or folder (-m): the same places
    const TensorFile* llm_file = nullptr;    // GGUF metadata, tried after the folders
    const TensorFile* model_file = nullptr;  // then this one's
    // last: the vocabulary built into the binary (builtin_vocabularies.h), if kind has one
    bool use_builtin = true;
};

// The first place that has a vocabulary, else the built-in one; without one (use_builtin
// false, or none for the kind), throws sd::Error naming the files needed and every place
// searched.
LlmTokenizer find_llm_tokenizer(const LlmTokenizerSearch& search);

}  // namespace sd
