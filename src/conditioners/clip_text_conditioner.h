// Prompt -> cross-attention context (and pooled vector) from one or more CLIP text encoders,
// as stable-diffusion.cpp's FrozenCLIPEmbedderWithCustomWords (SD 1.x, 2.x, SDXL): the A1111
// attention syntax is parsed, each piece tokenized (textual-inversion names become their
// learned vectors), BREAK pads to the next 75-token chunk, the ids are cut into 77-token
// windows (BOS + 75 + EOS, padded), each window is encoded by every encoder and their
// states concatenated along the width (SDXL: 768 + 1280), scaled by the tokens' weights
// and then rescaled so their mean is what it was before weighting; the windows are
// concatenated. The pooled vector is the marked encoder's projection of the first window's
// end token.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "models/clip_text_encoder.h"
#include "pipeline/components.h"
#include "pipeline/load_options.h"
#include "tokenizer/clip_tokenizer.h"

namespace sd {

// A textual-inversion embedding: the vectors that replace its name in a prompt.
struct TextualInversion {
    std::string name;
    Tensor vectors;  // f32 [n, hidden]
};

// Every embedding file (.safetensors, .gguf, .pt, .ckpt, .bin) in `dir`, named by its file
// name without the extension.
std::vector<EmbeddingFile> list_embedding_files(const std::string& dir);
// Reads each file's vectors; `hidden` is the text encoder's width.
std::vector<TextualInversion> load_textual_inversions(const std::vector<EmbeddingFile>& files,
                                                      int64_t hidden);

// One text encoder of a conditioner and how its states are read.
struct ClipBranch {
    ClipTextEncoder encoder;
    bool final_norm = true;       // SD 1.x/2.x read states after the final layer norm, SDXL not
    bool zero_after_end = false;  // SDXL's bigG sees 0 after a window's first end token
    bool pooled = false;          // this encoder gives the pooled vector (needs its projection)
};

struct TextEncoding {
    Tensor context;  // f32 [1, 77 * windows, sum of the encoders' widths]
    Tensor pooled;   // f32 [1, projection width], or undefined
};

class TextConditioner {
  public:
    // `pad_id` fills each window after its end token; textual inversions apply to the
    // first encoder (their rows must be its width).
    TextConditioner(ClipTokenizer tokenizer, std::vector<ClipBranch> encoders, int32_t pad_id,
                    int default_clip_skip, std::vector<TextualInversion> embeddings = {});

    // clip_skip <= 0 uses the model's default.
    TextEncoding encode(const std::string& prompt, int clip_skip) const;

    // The token ids and weights of a prompt, padded into 77-token windows (for tests).
    void tokenize(const std::string& prompt, std::vector<int32_t>& ids,
                  std::vector<float>& weights) const;

    // The tokens of a prompt as the encoder reads them: 75 for each window (the prompt
    // length limit counts these).
    size_t count_tokens(const std::string& prompt) const;

    // The text encoders' weights leave RSS until the next encode (see Residency).
    void release_weights() const;
    const ClipTextEncoder& encoder(size_t i = 0) const { return encoders_.at(i).encoder; }

  private:
    void append_piece(const std::string& text, float weight, std::vector<int32_t>& ids,
                      std::vector<float>& weights) const;

    Tensor branch_tokens(const ClipBranch& b, const std::vector<int32_t>& ids) const;
    Tensor encode_window(const std::vector<int32_t>& ids, int clip_skip) const;

    ClipTokenizer tokenizer_;
    std::vector<ClipBranch> encoders_;
    int32_t pad_id_;
    int default_clip_skip_;
    std::vector<TextualInversion> embeddings_;
    Tensor custom_vectors_;  // all embeddings' vectors, ids vocab + i
};

// A conditioner whose Conditioning is the text's cross-attention context alone (SD 1.x/2.x).
class ContextConditioner : public Conditioner {
  public:
    explicit ContextConditioner(TextConditioner text) : text_(std::move(text)) {}
    Conditioning encode(const ConditionRequest& r) const override {
        Conditioning c;
        c.context = text_.encode(r.prompt, r.clip_skip).context;
        return c;
    }
    size_t count_tokens(const std::string& prompt) const override {
        return text_.count_tokens(prompt);
    }
    void release_weights() const override { text_.release_weights(); }
    const TextConditioner& text() const { return text_; }

  private:
    TextConditioner text_;
};

// Where the CLIP vocabulary of `files` is looked for: --tokenizer-dir, the model's folder, the
// GGUF metadata of the file that carries a CLIP vocabulary, else of the model's own file (named
// as searched), then the built-in vocabulary.
ClipTokenizerSearch model_tokenizer_search(const ModelFiles& files, const LoadOptions& options);
// The CLIP BPE tokenizer from the first of those places that has one.
ClipTokenizer find_model_tokenizer(const ModelFiles& files, const LoadOptions& options);

// The CLIP text encoder under `prefix` ("cond_stage_model.transformer."), with its text
// projection when `with_projection`.
ClipTextEncoder load_clip_text_encoder(const ModelFiles& files, const LoadOptions& options,
                                       const std::string& prefix, bool with_projection = false);

// A text conditioner over `branches`, with the model's tokenizer and the textual inversions
// of `options` (sized for the first branch's encoder).
TextConditioner make_text_conditioner(const ModelFiles& files, const LoadOptions& options,
                                      std::vector<ClipBranch> branches, int32_t pad_id,
                                      int default_clip_skip);

}  // namespace sd
