#include "tokenizer/t5_tokenizer.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "io/json_limits.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/unicode_text.h"

namespace sd {

namespace fs = std::filesystem;
using PieceType = SentencePieceModel::PieceType;

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's word mark
constexpr float kUnkPenalty = 10.0f;                     // SentencePiece's unknown-piece cost

constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyScores = "tokenizer.ggml.scores";
constexpr const char* kKeyTypes = "tokenizer.ggml.token_type";
constexpr const char* kKeyUnk = "tokenizer.ggml.unknown_token_id";
constexpr const char* kKeyEos = "tokenizer.ggml.eos_token_id";
constexpr const char* kKeyPad = "tokenizer.ggml.padding_token_id";
constexpr const char* kKeyPrefix = "tokenizer.ggml.add_space_prefix";
constexpr const char* kKeyCollapse = "tokenizer.ggml.remove_extra_whitespaces";
constexpr const char* kKeyEscape = "tokenizer.ggml.escape_whitespaces";

// Bytes of the UTF-8 character starting with byte `b` (SentencePiece's OneCharLen).
size_t utf8_length(char b) {
    return "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[(static_cast<uint8_t>(b)) >> 4];
}

}  // namespace

struct T5Tokenizer::Impl {
    std::string source;
    std::vector<SentencePieceModel::Piece> pieces;
    std::unordered_map<std::string, int32_t> matchable;  // pieces text can produce
    size_t max_piece_bytes = 0;
    int32_t unk = -1, eos = -1, pad = -1;
    float min_score = FLT_MAX, max_score = -FLT_MAX;
    // Normalisation, as stable-diffusion.cpp: runs of spaces become one, then every space
    // becomes `replacement`, and one is put in front.
    bool add_prefix = true;
    bool collapse_spaces = true;
    std::string replacement{kMetaspace};

    // Checks the special ids and builds the lookup; `unk`, `eos`, `pad` set by the loader.
    void finish() {
        const auto n = static_cast<int32_t>(pieces.size());
        auto check_id = [&](int32_t id, const char* what) {
            if (id < 0 || id >= n) {
                fail("%s: the %s id %d is not in the vocabulary (0..%d)", source.c_str(), what, id,
                     n - 1);
            }
        };
        check_id(unk, "unknown-piece");
        check_id(eos, "</s>");
        check_id(pad, "<pad>");
        pieces[static_cast<size_t>(unk)].type = PieceType::Unknown;
        for (int32_t id = 0; id < n; ++id) {
            const auto& p = pieces[static_cast<size_t>(id)];
            if (p.type == PieceType::Unknown || p.type == PieceType::Control) continue;
            if (p.text.empty()) fail("%s: piece %d is empty", source.c_str(), id);
            if (!matchable.emplace(p.text, id).second) {
                fail("%s: the piece '%s' is in the vocabulary twice (ids %d and %d)",
                     source.c_str(), unicode::sanitize_utf8(p.text).c_str(), matchable[p.text], id);
            }
            max_piece_bytes = std::max(max_piece_bytes, p.text.size());
            if (p.type == PieceType::Normal) {
                min_score = std::min(min_score, p.score);
                max_score = std::max(max_score, p.score);
            }
        }
        if (matchable.empty()) fail("%s: the vocabulary has no normal pieces", source.c_str());
        if (min_score > max_score) min_score = max_score = 0.0f;
    }

    std::string normalize(std::string_view text) const;
    std::vector<int32_t> viterbi(const std::string& normalized) const;
};

// stable-diffusion.cpp's normalisation: invalid UTF-8 replaced (U+FFFD), runs of two or more
// spaces made one, then the text split at spaces the way std::getline does (a trailing empty
// field is dropped) and joined with the replacement, which is also put in front. No NFKC.
std::string T5Tokenizer::Impl::normalize(std::string_view text) const {
    const std::string valid = unicode::sanitize_utf8(text);
    std::string collapsed;
    collapsed.reserve(valid.size());
    for (char c : valid) {
        if (collapse_spaces && c == ' ' && !collapsed.empty() && collapsed.back() == ' ') continue;
        collapsed.push_back(c);
    }
    if (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
    std::string out = add_prefix ? replacement : std::string();
    for (char c : collapsed) {
        if (c == ' ') {
            out += replacement;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

// SentencePiece's unigram Viterbi (its optimized encoder): the best-scoring split into
// pieces, a character no piece starts with becoming <unk> at min_score - 10; consecutive
// <unk> are merged into one, as SentencePieceProcessor does.
std::vector<int32_t> T5Tokenizer::Impl::viterbi(const std::string& text) const {
    struct Node {
        int32_t id = -1;
        float score = 0.0f;
        int64_t start = -1;  // where the best path's last piece begins; -1: not reached
    };
    const size_t n = text.size();
    const float unk_score = min_score - kUnkPenalty;
    std::vector<Node> best(n + 1);
    auto offer = [&](size_t end, size_t start, int32_t id, float score) {
        Node& node = best[end];
        if (node.start == -1 || score > node.score) node = {id, score, static_cast<int64_t>(start)};
    };
    for (size_t start = 0; start < n;) {
        const size_t char_len = std::min(utf8_length(text[start]), n - start);
        const float base = best[start].score;
        bool has_single = false;
        const size_t longest = std::min(max_piece_bytes, n - start);
        for (size_t len = 1; len <= longest; ++len) {
            const auto it = matchable.find(text.substr(start, len));
            if (it == matchable.end()) continue;
            const auto& p = pieces[static_cast<size_t>(it->second)];
            if (p.type == PieceType::Unused) continue;
            const float score = p.type == PieceType::UserDefined
                                    ? static_cast<float>(len) * max_score - 0.1f
                                    : p.score;
            offer(start + len, start, it->second, base + score);
            if (len == char_len) has_single = true;
        }
        if (!has_single) offer(start + char_len, start, unk, base + unk_score);
        start += char_len;
    }
    std::vector<int32_t> ids;
    for (size_t end = n; end > 0; end = static_cast<size_t>(best[end].start)) {
        const int32_t id = best[end].id;
        if (!(id == unk && !ids.empty() && ids.back() == unk)) ids.push_back(id);
    }
    std::reverse(ids.begin(), ids.end());
    return ids;
}

T5Tokenizer::T5Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
T5Tokenizer::T5Tokenizer(T5Tokenizer&&) noexcept = default;
T5Tokenizer& T5Tokenizer::operator=(T5Tokenizer&&) noexcept = default;
T5Tokenizer::~T5Tokenizer() = default;

namespace {

int32_t find_piece(const std::vector<SentencePieceModel::Piece>& pieces, std::string_view text) {
    for (size_t i = 0; i < pieces.size(); ++i)
        if (pieces[i].text == text) return static_cast<int32_t>(i);
    return -1;
}

std::unique_ptr<T5Tokenizer::Impl> from_spiece(std::string_view bytes, const std::string& source) {
    SentencePieceModel m = parse_sentencepiece_model(bytes, source);
    if (m.model_type != 1) {
        fail("%s: a SentencePiece model of type %d (%s), not a unigram model: not a T5 tokenizer",
             source.c_str(), m.model_type,
             m.model_type == 2   ? "BPE"
             : m.model_type == 3 ? "word"
                                 : "char or unknown");
    }
    if (m.byte_fallback) {
        fail("%s: a SentencePiece model with byte fallback, which T5 tokenizers do not use",
             source.c_str());
    }
    auto impl = std::make_unique<T5Tokenizer::Impl>();
    impl->source = source;
    impl->add_prefix = m.add_dummy_prefix;
    impl->collapse_spaces = m.remove_extra_whitespaces;
    if (!m.escape_whitespaces) impl->replacement.assign(1, ' ');
    impl->unk = m.unk_id;
    impl->eos = m.eos_id >= 0 ? m.eos_id : find_piece(m.pieces, "</s>");
    impl->pad = m.pad_id >= 0 ? m.pad_id : find_piece(m.pieces, "<pad>");
    impl->pieces = std::move(m.pieces);
    return impl;
}

// The Metaspace pre-tokenizer, alone or inside a Sequence.
const nlohmann::json* find_metaspace(const nlohmann::json& pre) {
    if (!pre.is_object()) return nullptr;
    if (pre.value("type", "") == "Metaspace") return &pre;
    const auto it = pre.find("pretokenizers");
    if (it == pre.end() || !it->is_array()) return nullptr;
    for (const auto& p : *it)
        if (const auto* m = find_metaspace(p)) return m;
    return nullptr;
}

// model.vocab and model.unk_id of a Unigram tokenizer.json.
void read_unigram_vocab(const nlohmann::json& model, T5Tokenizer::Impl& impl) {
    const std::string& source = impl.source;
    const auto vocab = model.find("vocab");
    if (vocab == model.end() || !vocab->is_array())
        fail("%s: model.vocab is not an array of [piece, score] pairs", source.c_str());
    impl.pieces.reserve(vocab->size());
    for (const auto& item : *vocab) {
        if (!item.is_array() || item.size() != 2 || !item[0].is_string() || !item[1].is_number()) {
            fail("%s: model.vocab entry %zu is not a [piece, score] pair", source.c_str(),
                 impl.pieces.size());
        }
        impl.pieces.push_back(
            {item[0].get<std::string>(), item[1].get<float>(), PieceType::Normal});
    }
    const auto unk = model.find("unk_id");
    if (unk == model.end() || !unk->is_number_integer())
        fail("%s: model.unk_id is missing (a T5 vocabulary has <unk>)", source.c_str());
    impl.unk = unk->get<int32_t>();
}

// The special added tokens (control pieces: never produced from text) and the Metaspace
// pre-tokenizer's settings.
void read_specials_and_metaspace(const nlohmann::json& data, T5Tokenizer::Impl& impl) {
    if (const auto added = data.find("added_tokens"); added != data.end() && added->is_array()) {
        for (const auto& t : *added) {
            if (!t.is_object() || !t.value("special", false)) continue;
            const int64_t id = t.value("id", int64_t{-1});
            if (id >= 0 && static_cast<size_t>(id) < impl.pieces.size() &&
                impl.pieces[static_cast<size_t>(id)].text == t.value("content", std::string()))
                impl.pieces[static_cast<size_t>(id)].type = PieceType::Control;
        }
    }
    const auto pre = data.find("pre_tokenizer");
    const nlohmann::json* meta = pre == data.end() ? nullptr : find_metaspace(*pre);
    if (!meta) return;
    if (meta->contains("replacement") && (*meta)["replacement"].is_string() &&
        (*meta)["replacement"].get<std::string>() != kMetaspace)
        fail(
            "%s: the Metaspace pre-tokenizer's replacement is \"%s\", where T5's is \"%s\" "
            "(U+2581): not supported",
            impl.source.c_str(), (*meta)["replacement"].get<std::string>().c_str(),
            std::string(kMetaspace).c_str());
    if (meta->contains("add_prefix_space") && (*meta)["add_prefix_space"].is_boolean()) {
        impl.add_prefix = (*meta)["add_prefix_space"].get<bool>();
    } else {
        impl.add_prefix = meta->value("prepend_scheme", std::string("always")) != "never";
    }
}

std::unique_ptr<T5Tokenizer::Impl> from_json(std::string_view text, const std::string& source) {
    check_json_depth(source, text.data(), text.size(), 16);
    nlohmann::json data;
    try {
        data = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fail("%s: not valid JSON: %s", source.c_str(), e.what());
    }
    const auto model = data.is_object() ? data.find("model") : data.end();
    if (!data.is_object() || model == data.end() || !model->is_object())
        fail("%s: not a Hugging Face tokenizer.json (no \"model\" object)", source.c_str());
    // A field of an unexpected JSON type (a number where a string belongs ...) is named as
    // such, not thrown as the JSON library's own exception.
    try {
        const std::string type = model->value("type", std::string("(none)"));
        if (type != "Unigram") {
            fail("%s: a tokenizer.json of model type \"%s\", not \"Unigram\": not a T5 tokenizer",
                 source.c_str(), type.c_str());
        }
        auto impl = std::make_unique<T5Tokenizer::Impl>();
        impl->source = source;
        read_unigram_vocab(*model, *impl);
        read_specials_and_metaspace(data, *impl);
        impl->eos = find_piece(impl->pieces, "</s>");
        impl->pad = find_piece(impl->pieces, "<pad>");
        return impl;
    } catch (const nlohmann::json::exception& e) {
        fail("%s: a tokenizer.json field of the wrong type: %s", source.c_str(), e.what());
    }
}

const MetadataValue* find_key(const std::map<std::string, MetadataValue>& md, const char* key) {
    const auto it = md.find(key);
    return it == md.end() ? nullptr : &it->second;
}

const MetadataArray& array_of(const std::map<std::string, MetadataValue>& md, const char* key,
                              size_t size, const std::string& source) {
    const MetadataValue* v = find_key(md, key);
    const auto* a = v ? std::get_if<MetadataArray>(&v->value) : nullptr;
    if (!a) fail("%s: GGUF metadata has no array %s", source.c_str(), key);
    if (size != SIZE_MAX && a->size() != size) {
        fail("%s: GGUF metadata %s has %zu entries for %zu tokens", source.c_str(), key, a->size(),
             size);
    }
    return *a;
}

// An integer or boolean metadata value, or `fallback` when absent.
int64_t number_of(const std::map<std::string, MetadataValue>& md, const char* key, int64_t fallback,
                  const std::string& source) {
    const MetadataValue* v = find_key(md, key);
    if (!v) return fallback;
    if (const auto* i = std::get_if<int64_t>(&v->value)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&v->value)) return static_cast<int64_t>(*u);
    if (const auto* b = std::get_if<bool>(&v->value)) return *b ? 1 : 0;
    fail("%s: GGUF metadata %s is not a number", source.c_str(), key);
}

double real_of(const MetadataValue& v) {
    if (const auto* d = std::get_if<double>(&v.value)) return *d;
    if (const auto* i = std::get_if<int64_t>(&v.value)) return static_cast<double>(*i);
    if (const auto* u = std::get_if<uint64_t>(&v.value)) return static_cast<double>(*u);
    return std::nan("");
}

}  // namespace

T5Tokenizer T5Tokenizer::from_bytes(std::string_view bytes, const std::string& source) {
    const size_t first = bytes.find_first_not_of(" \t\r\n");
    const bool json = first != std::string_view::npos && bytes[first] == '{';
    auto impl = json ? from_json(bytes, source) : from_spiece(bytes, source);
    impl->finish();
    return T5Tokenizer(std::move(impl));
}

T5Tokenizer T5Tokenizer::from_file(const std::string& path) {
    return from_bytes(read_tokenizer_file(path, "T5 tokenizer (spiece.model or tokenizer.json)"),
                      path);
}

bool T5Tokenizer::gguf_has_vocab(const std::map<std::string, MetadataValue>& md) {
    const MetadataValue* model = find_key(md, kKeyModel);
    const auto* name = model ? std::get_if<std::string>(&model->value) : nullptr;
    return name && *name == "t5" && find_key(md, kKeyTokens);
}

T5Tokenizer T5Tokenizer::from_gguf_metadata(const std::map<std::string, MetadataValue>& md,
                                            const std::string& source) {
    if (!gguf_has_vocab(md))
        fail("%s: GGUF metadata carries no T5 vocabulary (%s \"t5\")", source.c_str(), kKeyModel);
    const MetadataArray& tokens = array_of(md, kKeyTokens, SIZE_MAX, source);
    const MetadataArray& scores = array_of(md, kKeyScores, tokens.size(), source);
    const MetadataValue* types_v = find_key(md, kKeyTypes);
    const MetadataArray* types =
        types_v ? &array_of(md, kKeyTypes, tokens.size(), source) : nullptr;
    auto impl = std::make_unique<Impl>();
    impl->source = source + " (GGUF metadata)";
    impl->pieces.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        const auto* text = std::get_if<std::string>(&tokens[i].value);
        const double score = real_of(scores[i]);
        const int64_t type = types ? static_cast<int64_t>(real_of((*types)[i])) : 1;
        if (!text || std::isnan(score) || type < 1 || type > 6)
            fail("%s: GGUF metadata token %zu is malformed", source.c_str(), i);
        impl->pieces.push_back(
            {*text, static_cast<float>(score), static_cast<PieceType>(static_cast<int32_t>(type))});
    }
    int32_t unk = -1;
    for (size_t i = 0; i < impl->pieces.size() && unk < 0; ++i)
        if (impl->pieces[i].type == PieceType::Unknown) unk = static_cast<int32_t>(i);
    impl->unk = static_cast<int32_t>(number_of(md, kKeyUnk, unk, source));
    impl->eos =
        static_cast<int32_t>(number_of(md, kKeyEos, find_piece(impl->pieces, "</s>"), source));
    impl->pad =
        static_cast<int32_t>(number_of(md, kKeyPad, find_piece(impl->pieces, "<pad>"), source));
    impl->add_prefix = number_of(md, kKeyPrefix, 1, source) != 0;
    impl->collapse_spaces = number_of(md, kKeyCollapse, 1, source) != 0;
    if (number_of(md, kKeyEscape, 1, source) == 0) impl->replacement.assign(1, ' ');
    impl->finish();
    return T5Tokenizer(std::move(impl));
}

std::map<std::string, MetadataValue> T5Tokenizer::to_gguf_metadata() const {
    MetadataArray tokens, scores, types;
    for (const auto& p : impl_->pieces) {
        tokens.push_back(MetadataValue{p.text});
        scores.push_back(MetadataValue{static_cast<double>(p.score)});
        types.push_back(MetadataValue{static_cast<int64_t>(p.type)});
    }
    std::map<std::string, MetadataValue> md;
    md[kKeyModel] = MetadataValue{std::string("t5")};
    md[kKeyTokens] = MetadataValue{std::move(tokens)};
    md[kKeyScores] = MetadataValue{std::move(scores)};
    md[kKeyTypes] = MetadataValue{std::move(types)};
    md[kKeyUnk] = MetadataValue{static_cast<int64_t>(impl_->unk)};
    md[kKeyEos] = MetadataValue{static_cast<int64_t>(impl_->eos)};
    md[kKeyPad] = MetadataValue{static_cast<int64_t>(impl_->pad)};
    md[kKeyPrefix] = MetadataValue{impl_->add_prefix};
    md[kKeyCollapse] = MetadataValue{impl_->collapse_spaces};
    md[kKeyEscape] = MetadataValue{impl_->replacement == kMetaspace};
    return md;
}

std::vector<int32_t> T5Tokenizer::encode_pieces(std::string_view text) const {
    return impl_->viterbi(impl_->normalize(text));
}

std::vector<int32_t> T5Tokenizer::encode(std::string_view text) const {
    std::vector<int32_t> ids = encode_pieces(text);
    ids.push_back(impl_->eos);
    return ids;
}

std::vector<int32_t> T5Tokenizer::pad_windows(const std::vector<int32_t>& ids, size_t max_length,
                                              std::vector<float>* weights,
                                              std::vector<float>* mask) const {
    if (max_length < 2)
        fail("T5 tokenizer: a window of %zu ids cannot hold an id and </s>", max_length);
    if (weights && weights->size() != ids.size())
        fail("T5 tokenizer: %zu weights for %zu ids", weights->size(), ids.size());
    size_t body = ids.size();
    if (body > 0 && ids.back() == impl_->eos) --body;
    const size_t chunk = max_length - 1;
    const size_t windows = std::max<size_t>(1, (body + chunk - 1) / chunk);
    std::vector<int32_t> out;
    std::vector<float> out_weights;
    out.reserve(windows * max_length);
    if (mask) mask->clear();
    for (size_t w = 0; w < windows; ++w) {
        const size_t begin = w * chunk, end = std::min(body, begin + chunk);
        out.insert(out.end(), ids.begin() + begin, ids.begin() + end);
        out.push_back(impl_->eos);
        if (mask) {
            mask->resize(w * max_length, 0.0f);  // the previous window's <pad>s
            mask->resize(w * max_length + (end - begin) + 1, 1.0f);
        }
        if (weights) {
            out_weights.insert(out_weights.end(), weights->begin() + begin, weights->begin() + end);
            out_weights.push_back(1.0f);
        }
    }
    out.resize(windows * max_length, impl_->pad);
    if (mask) mask->resize(windows * max_length, 0.0f);
    if (weights) {
        out_weights.resize(windows * max_length, 1.0f);
        *weights = std::move(out_weights);
    }
    return out;
}

const std::string& T5Tokenizer::piece(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= impl_->pieces.size()) {
        fail("T5 tokenizer: id %d is outside the vocabulary (0..%zu)", id,
             impl_->pieces.size() - 1);
    }
    return impl_->pieces[static_cast<size_t>(id)].text;
}

int32_t T5Tokenizer::id_of(std::string_view text) const {
    return find_piece(impl_->pieces, text);
}

int32_t T5Tokenizer::pad_id() const {
    return impl_->pad;
}
int32_t T5Tokenizer::eos_id() const {
    return impl_->eos;
}
int32_t T5Tokenizer::unk_id() const {
    return impl_->unk;
}
size_t T5Tokenizer::vocab_size() const {
    return impl_->pieces.size();
}

// --- finding the vocabulary ---

namespace {

constexpr const char* kFileNames[] = {"spiece.model", "tokenizer.json"};

// The vocabulary file in `dir`, or "" with the reason in `why`.
std::string file_in(const fs::path& dir, std::string& why) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        why = "no such folder";
        return {};
    }
    for (const char* name : kFileNames)
        if (fs::is_regular_file(dir / name, ec)) return (dir / name).string();
    why = "no spiece.model / tokenizer.json there";
    return {};
}

// --tokenizer-dir / SD_TOKENIZER_DIR: ROOT/t5/ (ROOT/umt5/); a file there that does not load is
// an error.
std::optional<T5Tokenizer> from_named_dir(const std::string& root, const char* label,
                                          const char* subdir, std::vector<std::string>& searched) {
    const fs::path dir = fs::path(root) / subdir;
    std::string why;
    const std::string file = file_in(dir, why);
    if (file.empty()) {
        searched.push_back(strfmt("%s: %s/: %s", label, dir.string().c_str(), why.c_str()));
        return std::nullopt;
    }
    SD_LOG_INFO("T5 tokenizer: %s (%s)", file.c_str(), label);
    return T5Tokenizer::from_file(file);
}

// Beside a model file: a file that is not a T5 vocabulary (a CLIP tokenizer.json) is skipped.
std::optional<T5Tokenizer> from_near(const std::string& path, const char* label,
                                     const char* sibling, std::vector<std::string>& searched) {
    if (path.empty()) {
        searched.push_back(strfmt("%s: no path given", label));
        return std::nullopt;
    }
    for (const fs::path& dir : folders_near(path, sibling)) {
        std::string why;
        const std::string file = file_in(dir, why);
        if (!file.empty()) {
            try {
                T5Tokenizer t = T5Tokenizer::from_file(file);
                SD_LOG_INFO("T5 tokenizer: %s (%s)", file.c_str(), label);
                return t;
            } catch (const Error& e) {
                why = e.what();
            }
        }
        searched.push_back(strfmt("%s: %s/: %s", label, dir.string().c_str(), why.c_str()));
    }
    return std::nullopt;
}

}  // namespace

T5Tokenizer find_t5_tokenizer(const T5TokenizerSearch& search) {
    std::vector<std::string> searched;
    // Wan's diffusers folder keeps UMT5's files in tokenizer/; FLUX's and SD3's T5 in
    // tokenizer_2/ (or tokenizer_3/, found beside it).
    const char* subdir = search.umt5 ? "umt5" : "t5";
    const char* sibling = search.umt5 ? "tokenizer" : "tokenizer_2";
    std::optional<T5Tokenizer> named;
    if (try_named_tokenizer_dirs(search.tokenizer_dir, search.use_env, searched,
                                 [&](const std::string& root, const char* label) {
                                     named = from_named_dir(root, label, subdir, searched);
                                     return named.has_value();
                                 })) {
        return std::move(*named);
    }
    if (auto t = from_near(search.t5_path, "beside the T5 file", sibling, searched))
        return std::move(*t);
    if (auto t = from_near(search.model_path, "beside the model", sibling, searched))
        return std::move(*t);
    if (!search.model_file) {
        searched.push_back("GGUF metadata: no GGUF file given");
    } else if (!T5Tokenizer::gguf_has_vocab(search.model_file->metadata)) {
        searched.push_back(strfmt("GGUF metadata of %s: no %s \"t5\"",
                                  search.model_file->path.c_str(), kKeyModel));
    } else {
        SD_LOG_INFO("T5 tokenizer: GGUF metadata of %s", search.model_file->path.c_str());
        return T5Tokenizer::from_gguf_metadata(search.model_file->metadata,
                                               search.model_file->path);
    }
    if (search.umt5)
        fail(
            "no UMT5 tokenizer vocabulary found. Wan's UMT5-XXL encoder needs tokenizer.json "
            "(Hugging Face, Unigram) or spiece.model of google/umt5-xxl (its checkpoints do not "
            "contain them). Searched, in order:%s\nDownload tokenizer.json from "
            "https://huggingface.co/google/umt5-xxl, put it in DIR/umt5/ and pass --tokenizer-dir "
            "DIR or set SD_TOKENIZER_DIR=DIR, or place it beside the --t5xxl file.",
            numbered_places(searched).c_str());
    fail(
        "no T5 tokenizer vocabulary found. The T5 encoder needs spiece.model (SentencePiece) or "
        "tokenizer.json (Hugging Face, Unigram), the google/t5-v1_1-xxl tokenizer files "
        "(checkpoints do not contain them; a T5 GGUF made by -M convert --tokenizer-dir "
        "carries it). Searched, in order:%s\nDownload spiece.model (or tokenizer.json) from "
        "https://huggingface.co/google/t5-v1_1-xxl, put it in DIR/t5/ and pass "
        "--tokenizer-dir DIR or set SD_TOKENIZER_DIR=DIR, or place it beside the T5 file.",
        numbered_places(searched).c_str());
}

}  // namespace sd
