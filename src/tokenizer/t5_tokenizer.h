// The T5 SentencePiece unigram tokenizer (the T5-XXL encoder of FLUX.1 and SD3), producing
// the ids stable-diffusion.cpp produces. Its vocabulary comes from a SentencePiece
// `spiece.model`, a Hugging Face `tokenizer.json` (model type "Unigram") or GGUF metadata
// (llama.cpp's `tokenizer.ggml.*` keys, model "t5"); find_t5_tokenizer() looks for it in the
// usual places. See README.md for the normalisation.
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

class T5Tokenizer {
  public:
    // From a spiece.model or a tokenizer.json, told apart by content (not by name).
    static T5Tokenizer from_file(const std::string& path);
    // From the contents of such a file; `source` names it in error messages.
    static T5Tokenizer from_bytes(std::string_view bytes, const std::string& source);
    // From GGUF metadata (keys in README.md); `source` names the file in error messages.
    static T5Tokenizer from_gguf_metadata(const std::map<std::string, MetadataValue>& metadata,
                                          const std::string& source);
    // Whether the metadata carries a T5 vocabulary (tokenizer.ggml.model "t5" with tokens).
    static bool gguf_has_vocab(const std::map<std::string, MetadataValue>& metadata);
    // The vocabulary as GGUF metadata (what from_gguf_metadata reads), for -M convert.
    std::map<std::string, MetadataValue> to_gguf_metadata() const;

    T5Tokenizer(T5Tokenizer&&) noexcept;
    T5Tokenizer& operator=(T5Tokenizer&&) noexcept;
    ~T5Tokenizer();

    // The pieces of `text` then </s>. Safe to call from several threads.
    std::vector<int32_t> encode(std::string_view text) const;
    // The pieces alone (no </s>).
    std::vector<int32_t> encode_pieces(std::string_view text) const;

    // stable-diffusion.cpp's T5 padding (FLUX: max_length 256): `ids` (as encode() gives, a
    // trailing </s> is dropped first) cut into windows of max_length - 1 ids each closed by
    // </s>; the last window is filled up to max_length with <pad>. At least one window. With
    // `weights` (one per id), the weights follow the ids; inserted ids get weight 1. `mask`
    // (when given) gets the reference's attention mask of the result: 1 for each window's ids
    // and its </s>, 0 for the <pad>s.
    std::vector<int32_t> pad_windows(const std::vector<int32_t>& ids, size_t max_length,
                                     std::vector<float>* weights = nullptr,
                                     std::vector<float>* mask = nullptr) const;

    // The piece of an id ("▁cat", "</s>"); throws sd::Error when out of range.
    const std::string& piece(int32_t id) const;
    // The id of a piece, or -1.
    int32_t id_of(std::string_view piece) const;

    int32_t pad_id() const;
    int32_t eos_id() const;
    int32_t unk_id() const;
    size_t vocab_size() const;

    struct Impl;

  private:
    explicit T5Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Where to look for the T5 vocabulary, in this order; the first place that has one wins.
struct T5TokenizerSearch {
    // UMT5 (Wan's encoder): its own vocabulary, in DIR/umt5/ and a diffusers tokenizer/ folder.
    bool umt5 = false;
    std::string tokenizer_dir;  // --tokenizer-dir DIR: DIR/t5/spiece.model or DIR/t5/tokenizer.json
    bool use_env = true;        // SD_TOKENIZER_DIR, same layout as --tokenizer-dir
    std::string t5_path;        // the T5 file (--t5xxl): its folder, tokenizer_2/ beside it
    std::string model_path;     // the model file or folder (-m): the same places
    const TensorFile* model_file = nullptr;  // a file whose GGUF metadata may carry it
};

// Throws sd::Error naming the files needed and every place searched when none has them.
T5Tokenizer find_t5_tokenizer(const T5TokenizerSearch& search);

}  // namespace sd
