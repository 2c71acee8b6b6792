// Prompt -> cross-attention context for SD 1.x/2.x, as stable-diffusion.cpp's
// FrozenCLIPEmbedderWithCustomWords: the A1111 attention syntax is parsed, each piece
// tokenized (textual-inversion names become their learned vectors), BREAK pads to the
// next 75-token chunk, the ids are cut into 77-token windows (BOS + 75 + EOS, padded),
// each window is encoded, its hidden states are scaled by the tokens' weights and then
// rescaled so their mean is what it was before weighting; the windows are concatenated.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/clip_text_encoder.h"
#include "tokenizer/clip_tokenizer.h"

namespace sd {

// A textual-inversion embedding: the vectors that replace its name in a prompt.
struct TextualInversion {
    std::string name;
    Tensor vectors;  // f32 [n, hidden]
};

struct EmbeddingFile {
    std::string name;  // the word that calls it in a prompt
    std::string path;  // .safetensors, .gguf, .pt, .ckpt, .bin
};

// Every embedding file (.safetensors, .gguf, .pt, .ckpt, .bin) in `dir`, named by its file
// name without the extension.
std::vector<EmbeddingFile> list_embedding_files(const std::string& dir);
// Reads each file's vectors; `hidden` is the text encoder's width.
std::vector<TextualInversion> load_textual_inversions(const std::vector<EmbeddingFile>& files, int64_t hidden);

class TextConditioner {
  public:
    TextConditioner(ClipTokenizer tokenizer, ClipTextEncoder encoder, int32_t pad_id,
                    int default_clip_skip, std::vector<TextualInversion> embeddings = {});

    // f32 [1, 77 * windows, hidden]. clip_skip <= 0 uses the model's default.
    Tensor encode(const std::string& prompt, int clip_skip) const;

    // The token ids and weights of a prompt, padded into 77-token windows (for tests).
    void tokenize(const std::string& prompt, std::vector<int32_t>& ids,
                  std::vector<float>& weights) const;

    // The text encoder's weights leave RSS until the next encode (see Residency).
    void release_weights() const { encoder_.release_weights(); }

  private:
    void append_piece(const std::string& text, float weight, std::vector<int32_t>& ids,
                      std::vector<float>& weights) const;

    ClipTokenizer tokenizer_;
    ClipTextEncoder encoder_;
    int32_t pad_id_;
    int default_clip_skip_;
    std::vector<TextualInversion> embeddings_;
    Tensor custom_vectors_;  // all embeddings' vectors, ids vocab + i
};

}  // namespace sd
