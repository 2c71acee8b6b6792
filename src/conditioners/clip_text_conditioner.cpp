#include "conditioners/clip_text_conditioner.h"

#include <dirent.h>

#include <algorithm>

#include "base/cancel.h"
#include "base/error.h"
#include "base/log.h"
#include "conditioners/prompt_weighting.h"
#include "io/tensor_file.h"
#include "ops/ops.h"

namespace sd {
namespace {

constexpr size_t kWindow = 77;
constexpr size_t kChunk = kWindow - 2;

bool has_extension(const std::string& name, std::string& stem) {
    for (const char* ext : {".safetensors", ".gguf", ".pt", ".ckpt", ".bin", ".pth"}) {
        size_t n = std::char_traits<char>::length(ext);
        if (name.size() > n && name.compare(name.size() - n, n, ext) == 0) {
            stem = name.substr(0, name.size() - n);
            return true;
        }
    }
    return false;
}

// The embedding's vectors: the file's first tensor whose rows are `hidden` wide.
Tensor embedding_vectors(const TensorFile& file, int64_t hidden) {
    for (const TensorRecord& r : file.tensors) {
        if (r.shape.size() == 0 || r.shape.size() > 2 || r.shape[r.shape.size() - 1] != hidden)
            continue;
        Tensor t = convert(r.load(), DType::F32);
        return t.reshape({-1, hidden}).contiguous();
    }
    fail(
        "%s: no tensor with rows of %lld values (the text encoder's width); is it an embedding for "
        "another model?",
        file.path.c_str(), (long long)hidden);
}

}  // namespace

std::vector<EmbeddingFile> list_embedding_files(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) fail("--embd-dir: cannot open folder '%s'", dir.c_str());
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) names.push_back(e->d_name);
    ::closedir(d);
    std::sort(names.begin(), names.end());
    std::vector<EmbeddingFile> out;
    for (const std::string& name : names) {
        std::string stem;
        if (has_extension(name, stem)) out.push_back({stem, dir + "/" + name});
    }
    return out;
}

std::vector<TextualInversion> load_textual_inversions(const std::vector<EmbeddingFile>& files,
                                                      int64_t hidden) {
    std::vector<TextualInversion> out;
    for (const EmbeddingFile& f : files) {
        SD_CHECK(!f.name.empty(), "embedding file '%s' has no name to call it by", f.path.c_str());
        TensorFile file = open_tensor_file(f.path);
        out.push_back({f.name, embedding_vectors(file, hidden)});
        SD_LOG_INFO("textual inversion '%s': %lld vectors", f.name.c_str(),
                    (long long)out.back().vectors.size(0));
    }
    return out;
}

TextConditioner::TextConditioner(ClipTokenizer tokenizer, std::vector<ClipBranch> encoders,
                                 int32_t pad_id, int default_clip_skip,
                                 std::vector<TextualInversion> embeddings)
    : tokenizer_(std::move(tokenizer)),
      encoders_(std::move(encoders)),
      pad_id_(pad_id),
      default_clip_skip_(default_clip_skip),
      embeddings_(std::move(embeddings)) {
    // Longest names first, so a name that contains another wins.
    std::sort(embeddings_.begin(), embeddings_.end(),
              [](const TextualInversion& a, const TextualInversion& b) {
                  return a.name.size() > b.name.size();
              });
    SD_CHECK(!encoders_.empty(), "a text conditioner needs at least one text encoder");
    std::vector<Tensor> all;
    for (const TextualInversion& e : embeddings_) all.push_back(e.vectors);
    if (!all.empty()) custom_vectors_ = concat(all, 0);
}

void TextConditioner::release_weights() const {
    for (const ClipBranch& b : encoders_) b.encoder.release_weights();
}

// Tokenizes one weighted piece; textual-inversion names in it become their vector ids.
void TextConditioner::append_piece(const std::string& text, float weight, std::vector<int32_t>& ids,
                                   std::vector<float>& weights) const {
    size_t best = std::string::npos, best_index = 0;
    int64_t first_id = static_cast<int64_t>(tokenizer_.vocab_size());
    int64_t id_of_best = 0;
    for (size_t i = 0, offset = 0; i < embeddings_.size();
         offset += embeddings_[i].vectors.size(0), ++i) {
        size_t at = text.find(embeddings_[i].name);
        if (at != std::string::npos && (best == std::string::npos || at < best)) {
            best = at;
            best_index = i;
            id_of_best = first_id + static_cast<int64_t>(offset);
        }
    }
    if (best == std::string::npos) {
        std::vector<int32_t> piece = tokenizer_.encode(text);
        ids.insert(ids.end(), piece.begin(), piece.end());
        weights.insert(weights.end(), piece.size(), weight);
        return;
    }
    append_piece(text.substr(0, best), weight, ids, weights);
    const TextualInversion& e = embeddings_[best_index];
    for (int64_t k = 0; k < e.vectors.size(0); ++k) {
        ids.push_back(static_cast<int32_t>(id_of_best + k));
        weights.push_back(weight);
    }
    append_piece(text.substr(best + e.name.size()), weight, ids, weights);
}

void TextConditioner::tokenize(const std::string& prompt, std::vector<int32_t>& ids,
                               std::vector<float>& weights) const {
    std::vector<int32_t> raw;
    std::vector<float> raw_weights;
    for (const WeightedText& piece : parse_prompt_attention(prompt)) {
        cancellation_point();
        if (piece.is_break) {
            size_t pad = ClipTokenizer::break_padding(raw.size(), kChunk);
            raw.insert(raw.end(), pad, tokenizer_.eos_id());
            raw_weights.insert(raw_weights.end(), pad, 1.0f);
            continue;
        }
        append_piece(piece.text, piece.weight, raw, raw_weights);
    }
    weights = raw_weights;
    ids = tokenizer_.pad_windows(raw, kWindow, pad_id_, &weights);
}

// Every encoder's states of one window, concatenated along the width: [1, 77, sum of widths].
// One window's ids as encoder `b` reads them: i32 [1, 77], 0 after the first end token
// where the branch asks for it.
Tensor TextConditioner::branch_tokens(const ClipBranch& b, const std::vector<int32_t>& ids) const {
    Tensor tokens = Tensor::empty({1, static_cast<int64_t>(kWindow)}, DType::I32);
    int32_t* t = tokens.data<int32_t>();
    std::copy(ids.begin(), ids.end(), t);
    if (b.zero_after_end) {
        int32_t* end = std::find(t, t + kWindow, tokenizer_.eos_id());
        if (end != t + kWindow) std::fill(end + 1, t + kWindow, 0);
    }
    return tokens;
}

Tensor TextConditioner::encode_window(const std::vector<int32_t>& ids, int clip_skip) const {
    std::vector<Tensor> states;
    for (const ClipBranch& b : encoders_) {
        Tensor tokens = branch_tokens(b, ids);
        const Tensor& extra = &b == &encoders_.front() ? custom_vectors_ : Tensor();
        states.push_back(b.encoder.forward(tokens, clip_skip, extra, b.final_norm));
    }
    return states.size() == 1 ? states[0] : concat(states, 2);
}

size_t TextConditioner::count_tokens(const std::string& prompt) const {
    std::vector<int32_t> ids;
    std::vector<float> weights;
    tokenize(prompt, ids, weights);
    return ids.size() / kWindow * kChunk;
}

TextEncoding TextConditioner::encode(const std::string& prompt, int clip_skip) const {
    if (clip_skip <= 0) clip_skip = default_clip_skip_;
    std::vector<int32_t> ids;
    std::vector<float> weights;
    tokenize(prompt, ids, weights);
    const size_t windows = ids.size() / kWindow;
    SD_CHECK(windows >= 1 && ids.size() == windows * kWindow && weights.size() == ids.size(),
             "tokenizer returned %zu ids for %zu weights", ids.size(), weights.size());
    TextEncoding out;
    std::vector<Tensor> parts;
    for (size_t w = 0; w < windows; ++w) {
        cancellation_point();  // a long prompt is thousands of windows
        std::vector<int32_t> window(ids.begin() + w * kWindow, ids.begin() + (w + 1) * kWindow);
        Tensor hidden = encode_window(window, clip_skip);  // [1, 77, D]
        // Weight each token's state, then restore the window's mean (A1111's renormalisation).
        const float before = mean(hidden.flatten(), 0).item();
        Tensor w_tensor = Tensor::from_vector(
            {1, static_cast<int64_t>(kWindow), 1},
            std::vector<float>(weights.begin() + w * kWindow, weights.begin() + (w + 1) * kWindow));
        Tensor weighted = hidden * w_tensor;
        const float after = mean(weighted.flatten(), 0).item();
        parts.push_back(weighted * (before / after));
        if (w > 0) continue;
        for (const ClipBranch& b : encoders_) {
            if (!b.pooled) continue;
            // The first end token (the last position when the window has none).
            auto end = std::find(window.begin(), window.end(), tokenizer_.eos_id());
            const int64_t index =
                std::min<int64_t>(end - window.begin(), static_cast<int64_t>(kWindow) - 1);
            out.pooled = b.encoder.pooled(branch_tokens(b, window), index);
        }
    }
    out.context = parts.size() == 1 ? parts[0] : concat(parts, 1);
    return out;
}

ClipTokenizerSearch model_tokenizer_search(const ModelFiles& files, const LoadOptions& options) {
    ClipTokenizerSearch search;
    search.tokenizer_dir = options.tokenizer_dir;
    search.model_path = options.model_path;
    // The file that carries a CLIP vocabulary, else the first (the model's own, named in the
    // message as searched).
    for (const TensorFile& f : files.files()) {
        if (ClipTokenizer::gguf_has_vocab(f.metadata)) search.model_file = &f;
    }
    if (!search.model_file && !files.files().empty()) search.model_file = &files.files().front();
    return search;
}

ClipTokenizer find_model_tokenizer(const ModelFiles& files, const LoadOptions& options) {
    return find_clip_tokenizer(model_tokenizer_search(files, options));
}

ClipTextEncoder load_clip_text_encoder(const ModelFiles& files, const LoadOptions& options,
                                       const std::string& prefix, bool with_projection) {
    const Residency residency = options.memory.residency;
    if (!with_projection)
        return ClipTextEncoder::load(Weights(files, prefix + "text_model.", residency));
    Weights projection(files, prefix + "text_projection.", residency);
    return ClipTextEncoder::load(Weights(files, prefix + "text_model.", residency), &projection);
}

TextConditioner make_text_conditioner(const ModelFiles& files, const LoadOptions& options,
                                      std::vector<ClipBranch> branches, int32_t pad_id,
                                      int default_clip_skip) {
    std::vector<TextualInversion> embeddings;
    if (!options.embeddings.empty() && !branches.empty()) {
        embeddings =
            load_textual_inversions(options.embeddings, branches.front().encoder.config().hidden);
    }
    return TextConditioner(find_model_tokenizer(files, options), std::move(branches), pad_id,
                           default_clip_skip, std::move(embeddings));
}

}  // namespace sd
