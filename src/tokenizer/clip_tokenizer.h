// The CLIP byte-level BPE tokenizer of SD 1.x/2.x/XL (and the CLIP-L/G encoders of SD3 and
// FLUX), producing the ids stable-diffusion.cpp produces. Its vocabulary comes from the
// Hugging Face files vocab.json + merges.txt or from GGUF metadata (see README.md for the
// keys); find_clip_tokenizer() looks for it in the usual places.
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

class ClipTokenizer {
  public:
    static constexpr int32_t kStartOfTextId = 49406;  // in the standard vocabulary
    static constexpr int32_t kEndOfTextId = 49407;
    static constexpr size_t kContextLength = 77;

    // How the text is split into words before BPE.
    enum class PreTokenizer {
        // stable-diffusion.cpp (the default): ASCII-only whitespace cleaning, lower-casing and
        // letter/digit classes, as its std::regex in the "C" locale does; every non-ASCII
        // byte counts as punctuation ("café" -> "caf" + "é").
        SdCpp,
        // OpenAI CLIP's simple_tokenizer without ftfy/html unescaping: Unicode whitespace,
        // lower case and \p{L} / \p{N} classes ("café" stays one word).
        Unicode,
    };

    // From a folder holding vocab.json and merges.txt.
    static ClipTokenizer from_dir(const std::string& dir);
    static ClipTokenizer from_files(const std::string& vocab_json_path,
                                    const std::string& merges_txt_path);
    // From the files' contents; `source` names them in error messages.
    static ClipTokenizer from_strings(std::string_view vocab_json, std::string_view merges_txt,
                                      const std::string& source);
    // From GGUF metadata (keys in README.md); `source` names the file in error messages.
    static ClipTokenizer from_gguf_metadata(const std::map<std::string, MetadataValue>& metadata,
                                            const std::string& source);
    // Whether the metadata carries a CLIP vocabulary: tokens, and tokenizer.ggml.model "clip"
    // or none (a T5's or an LLM's vocabulary is not one).
    static bool gguf_has_vocab(const std::map<std::string, MetadataValue>& metadata);
    // The metadata that from_gguf_metadata() reads back: what a converter writes into a GGUF.
    std::map<std::string, MetadataValue> to_gguf_metadata() const;

    ClipTokenizer(ClipTokenizer&&) noexcept;
    ClipTokenizer& operator=(ClipTokenizer&&) noexcept;
    ~ClipTokenizer();

    void set_pre_tokenizer(PreTokenizer mode);
    PreTokenizer pre_tokenizer() const;

    // Raw ids of `text`, no BOS/EOS, no padding. Literal "<|startoftext|>" / "<|endoftext|>"
    // in the text (any case) give their special ids. Invalid UTF-8 is first replaced by
    // U+FFFD, one per maximal invalid subsequence. Safe to call from several threads.
    std::vector<int32_t> encode(std::string_view text) const;

    // encode(text) cut into windows of `max_length` ids as stable-diffusion.cpp does:
    // each window is BOS + up to max_length - 2 ids + EOS, padded with `pad_id` to
    // max_length (SD 1.x/XL-L pad with EOS 49407, SD 2.x's OpenCLIP with 0). A text of up to
    // max_length - 2 ids (also the empty text) gives one window, longer texts one window per
    // max_length - 2 ids, the last one padded. max_length must be at least 3.
    std::vector<int32_t> tokenize_padded(std::string_view text, size_t max_length = kContextLength,
                                         int32_t pad_id = kEndOfTextId) const;
    // The same windowing for ids already encoded (e.g. prompt-weighting segments joined),
    // with their per-id weights when given (BOS/EOS/padding get weight 1).
    std::vector<int32_t> pad_windows(const std::vector<int32_t>& ids, size_t max_length,
                                     int32_t pad_id, std::vector<float>* weights = nullptr) const;
    // How many EOS ids stable-diffusion.cpp inserts for a "BREAK" after `count` ids: up to the
    // next multiple of `chunk` (max_length - 2), none when already on one (also at 0).
    static size_t break_padding(size_t count, size_t chunk = kContextLength - 2);

    // Text of `ids` for debugging: words joined by spaces, BOS/EOS left out, bytes decoded
    // back to UTF-8 (a cut-off multi-byte character shows as U+FFFD). Throws sd::Error for
    // an id outside the vocabulary.
    std::string decode(const std::vector<int32_t>& ids) const;

    // Id of a vocabulary entry as spelled in vocab.json ("cat</w>", "<|endoftext|>"), or -1.
    int32_t id_of(std::string_view token) const;
    // The vocabulary entry of an id; throws sd::Error when out of range.
    const std::string& token_of(int32_t id) const;

    int32_t bos_id() const;
    int32_t eos_id() const;
    size_t vocab_size() const;
    size_t merge_count() const;

  private:
    struct Impl;
    explicit ClipTokenizer(std::unique_ptr<Impl> impl);
    static ClipTokenizer load_texts(std::string_view vocab_json, const std::string& vocab_name,
                                    std::string_view merges_txt, const std::string& merges_name);
    std::unique_ptr<Impl> impl_;
};

// Where to look for the CLIP vocabulary, in this order; the first place that has both files
// wins. A place that has them but holds malformed files is an error, not skipped.
struct ClipTokenizerSearch {
    std::string tokenizer_dir;  // --tokenizer-dir DIR: DIR/clip/vocab.json + DIR/clip/merges.txt
    bool use_env = true;        // SD_TOKENIZER_DIR, same layout as --tokenizer-dir
    std::string model_path;     // a tokenizer/ folder beside this file, or inside this folder
    const TensorFile* model_file = nullptr;  // its GGUF metadata
    bool use_builtin = true;  // last: the vocabulary built into the binary (builtin_vocabularies.h)
};

// The first place that has a vocabulary, else the built-in one; with use_builtin false, throws
// sd::Error naming the files needed and every place searched when none has them.
ClipTokenizer find_clip_tokenizer(const ClipTokenizerSearch& search);

}  // namespace sd
