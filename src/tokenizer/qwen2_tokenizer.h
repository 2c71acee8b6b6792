// The byte-level BPE tokenizer of the Qwen2 vocabulary (Qwen2.5, Qwen2.5-VL and Qwen3: the
// LLM text encoders of Z-Image, Qwen-Image, ...), producing the ids stable-diffusion.cpp
// produces: its own pre-tokenization (see README.md, it differs from Hugging Face's in a few
// places), special tokens split out of the text first. The vocabulary comes from a Hugging
// Face tokenizer.json, vocab.json + merges.txt, or GGUF metadata (llama.cpp's
// `tokenizer.ggml.*` keys, model "gpt2"); find_qwen2_tokenizer() looks for it.
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

class Qwen2Tokenizer {
  public:
    // From a Hugging Face tokenizer.json (model type "BPE", byte-level, no end-of-word
    // suffix); its added_tokens are the special tokens recognised in text.
    static Qwen2Tokenizer from_file(const std::string& path);
    static Qwen2Tokenizer from_json_bytes(std::string_view json, const std::string& source);
    // From vocab.json + merges.txt. They hold no special tokens: Qwen2's (<|endoftext|>,
    // <|im_start|>, ... </think>) are appended after the vocabulary, as the reference does.
    static Qwen2Tokenizer from_vocab_merges(const std::string& vocab_json_path,
                                            const std::string& merges_txt_path);
    static Qwen2Tokenizer from_vocab_merges_bytes(std::string_view vocab_json,
                                                  std::string_view merges_txt,
                                                  const std::string& source);
    // From GGUF metadata (keys in README.md); `source` names the file in error messages.
    static Qwen2Tokenizer from_gguf_metadata(const std::map<std::string, MetadataValue>& metadata,
                                             const std::string& source);
    // Whether the metadata carries a byte-level BPE vocabulary that may be Qwen2's
    // (tokenizer.ggml.model "gpt2" with tokens, tokenizer.ggml.pre absent or "qwen2").
    static bool gguf_has_vocab(const std::map<std::string, MetadataValue>& metadata);
    // The vocabulary as GGUF metadata (what from_gguf_metadata reads), for -M convert.
    std::map<std::string, MetadataValue> to_gguf_metadata() const;

    Qwen2Tokenizer(Qwen2Tokenizer&&) noexcept;
    Qwen2Tokenizer& operator=(Qwen2Tokenizer&&) noexcept;
    ~Qwen2Tokenizer();

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

    // <|endoftext|>: the reference's end-of-text and padding id (151643).
    int32_t eos_id() const;
    int32_t pad_id() const;
    size_t vocab_size() const;
    size_t merge_count() const;

    struct Impl;

  private:
    explicit Qwen2Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Where to look for the Qwen2 vocabulary, in this order; the first place that has one wins.
struct Qwen2TokenizerSearch {
    std::string tokenizer_dir;  // --tokenizer-dir DIR: DIR/qwen2/tokenizer.json or
                                // DIR/qwen2/vocab.json + merges.txt
    bool use_env = true;        // SD_TOKENIZER_DIR, same layout as --tokenizer-dir
    std::string llm_path;       // the LLM file (--llm): its folder, tokenizer/ in or beside it
    std::string model_path;     // the model file or folder (-m): the same places
    const TensorFile* llm_file = nullptr;    // GGUF metadata, tried after the folders
    const TensorFile* model_file = nullptr;  // then this one's
    bool use_builtin = true;  // last: the vocabulary built into the binary (builtin_vocabularies.h)
};

// The first place that has a vocabulary, else the built-in one; with use_builtin false, throws
// sd::Error naming the files needed and every place searched when none has them.
Qwen2Tokenizer find_qwen2_tokenizer(const Qwen2TokenizerSearch& search);

}  // namespace sd
