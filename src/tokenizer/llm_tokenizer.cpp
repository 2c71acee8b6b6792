#include "tokenizer/llm_tokenizer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/cancel.h"
#include "base/error.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "tokenizer/builtin_vocabularies.h"
#include "tokenizer/byte_bpe.h"
#include "tokenizer/qwen2_pretokenizer.h"
#include "tokenizer/tekken_vocabulary.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/unicode_text.h"

namespace sd {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyPre = "tokenizer.ggml.pre";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyMerges = "tokenizer.ggml.merges";
constexpr const char* kKeyTypes = "tokenizer.ggml.token_type";
constexpr const char* kKeyEos = "tokenizer.ggml.eos_token_id";
constexpr const char* kKeyPad = "tokenizer.ggml.padding_token_id";
constexpr const char* kKeyBos = "tokenizer.ggml.bos_token_id";
constexpr const char* kModelName = "gpt2";

// llama.cpp's token types (gguf.TokenType).
enum TokenType : uint8_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

// The special tokens the reference appends after the merges (vocab.json holds none), in id
// order; the first 14 are "special" in Qwen's tokenizer.json, the rest plain added tokens.
constexpr const char* kQwen2Specials[] = {
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
};
constexpr size_t kQwen2ControlCount = 14;

// Mistral's named special tokens (tekken ids 0..19, as the reference's MistralTokenizer);
// ids 20..999 are <SPECIAL_20> ... <SPECIAL_999>.
constexpr const char* kMistralSpecials[] = {
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
};
constexpr size_t kMistralSpecialCount = 1000;

constexpr size_t kMaxCacheEntries = 1u << 16;
constexpr size_t kMaxCachedWordBytes = 256;

}  // namespace

const LlmVocabulary& qwen2_vocabulary() {
    static const LlmVocabulary v = [] {
        LlmVocabulary k{"Qwen2", "qwen2", "qwen2"};
        k.required = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
        k.specials.assign(std::begin(kQwen2Specials), std::end(kQwen2Specials));
        k.control_count = kQwen2ControlCount;
        k.eos = k.pad = "<|endoftext|>";
        k.builtin = true;
        return k;
    }();
    return v;
}

const LlmVocabulary& mistral_vocabulary() {
    static const LlmVocabulary v = [] {
        LlmVocabulary k{"Mistral", "tekken", "mistral"};
        k.required = {"<s>", "</s>", "[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"};
        k.specials.assign(std::begin(kMistralSpecials), std::end(kMistralSpecials));
        for (size_t i = k.specials.size(); i < kMistralSpecialCount; ++i)
            k.specials.push_back(strfmt("<SPECIAL_%zu>", i));
        k.control_count = k.specials.size();
        k.eos = "</s>";
        k.pad = "<pad>";
        k.bos = "<s>";
        return k;
    }();
    return v;
}

// --- the tokenizer ---

struct LlmTokenizer::Impl {
    std::string source;
    const LlmVocabulary* kind = nullptr;
    std::vector<std::string> tokens;  // by id
    std::vector<uint8_t> types;       // TokenType by id
    // Keys view the strings in `tokens`, which stay put when the vector moves as a whole.
    std::unordered_map<std::string_view, int32_t> ids;
    bpe::Merges merges;
    std::array<int32_t, 256> byte_id{};
    bool byte_ids_known = false;    // set by the source (tekken), else found from the symbols
    std::vector<int32_t> specials;  // ids recognised in text, longest first
    int32_t eos = -1, pad = -1, bos = -1;
    double load_ms = 0.0;

    mutable std::mutex cache_mutex;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

    int32_t find(std::string_view token) const {
        const auto it = ids.find(token);
        return it == ids.end() ? -1 : it->second;
    }
    bool special(int32_t id) const {
        return types[static_cast<size_t>(id)] == kControl ||
               types[static_cast<size_t>(id)] == kUserDefined;
    }

    void add_token(std::string text, uint8_t type) {
        tokens.push_back(std::move(text));
        types.push_back(type);
    }

    // Builds the lookup once `tokens` is complete. With `shadowing`, a later token spelled
    // as an earlier one is left out of the lookup (tekken: a byte token spelled as a special
    // one); otherwise that is an error.
    void index_tokens(bool shadowing = false) {
        ids.clear();
        ids.reserve(tokens.size() * 2);
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (tokens[i].empty()) fail("%s: token %zu is empty", source.c_str(), i);
            if (!ids.emplace(tokens[i], static_cast<int32_t>(i)).second && !shadowing) {
                fail("%s: the token '%s' is in the vocabulary twice (ids %d and %zu)",
                     source.c_str(), printable_excerpt(tokens[i]).c_str(), ids[tokens[i]], i);
            }
        }
    }

    // `where` names the entry in messages ("merges.txt line 7").
    void add_merge(std::string_view left, std::string_view right, const std::string& where) {
        std::string joined;
        joined.reserve(left.size() + right.size());
        joined.append(left).append(right);
        const int32_t a = find(left), b = find(right), m = find(joined);
        if (a < 0 || b < 0 || m < 0) {
            const std::string_view missing = a < 0   ? left
                                             : b < 0 ? right
                                                     : std::string_view(joined);
            fail("%s: the merge '%s %s' uses '%s', which is not in the vocabulary", where.c_str(),
                 printable_excerpt(left).c_str(), printable_excerpt(right).c_str(),
                 printable_excerpt(missing).c_str());
        }
        if (!merges.add(a, b, m)) {
            fail("%s: the merge '%s %s' appears twice", where.c_str(),
                 printable_excerpt(left).c_str(), printable_excerpt(right).c_str());
        }
    }

    void add_merge_line(std::string_view line, const std::string& where) {
        const size_t space = line.find(' ');
        if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos) {
            fail("%s: expected two tokens separated by one space, got '%s'", where.c_str(),
                 printable_excerpt(line).c_str());
        }
        add_merge(line.substr(0, space), line.substr(space + 1), where);
    }

    // The byte tokens' ids from their GPT-2 symbols (unless set already, as tekken does).
    void find_byte_tokens() {
        if (byte_ids_known) return;
        for (int b = 0; b < 256; ++b) {
            const std::string sym = bpe::byte_symbol(static_cast<uint8_t>(b));
            byte_id[b] = find(sym);
            if (byte_id[b] < 0) {
                fail(
                    "%s: the vocabulary lacks the byte token '%s' (a byte-level BPE vocabulary "
                    "has all 256): not a %s vocabulary",
                    source.c_str(), sym.c_str(), kind->name);
            }
        }
    }

    // Checks that this is a vocabulary of `kind` and prepares encoding.
    void finish(std::chrono::steady_clock::time_point t0) {
        if (find("<|startoftext|>") >= 0)
            fail("%s: a CLIP vocabulary (it has <|startoftext|>), not %s's", source.c_str(),
                 kind->name);
        find_byte_tokens();
        for (const std::string& name : kind->required) {
            const int32_t id = find(name);
            if (id < 0 || !special(id)) {
                fail("%s: no special token %s: not a %s vocabulary", source.c_str(), name.c_str(),
                     kind->name);
            }
        }
        auto special_id = [&](const std::string& name) {
            const int32_t id = find(name);
            if (id < 0 || !special(id))
                fail("%s: no special token %s: not a %s vocabulary", source.c_str(), name.c_str(),
                     kind->name);
            return id;
        };
        eos = special_id(kind->eos);
        pad = special_id(kind->pad);
        if (!kind->bos.empty()) bos = special_id(kind->bos);
        for (size_t i = 0; i < tokens.size(); ++i)
            if (special(static_cast<int32_t>(i))) specials.push_back(static_cast<int32_t>(i));
        // Longest first: at one position the longest special wins.
        std::stable_sort(specials.begin(), specials.end(), [&](int32_t x, int32_t y) {
            return tokens[static_cast<size_t>(x)].size() > tokens[static_cast<size_t>(y)].size();
        });
        load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                      .count();
        SD_LOG_DEBUG("%s tokenizer from %s: %zu tokens, %zu merges, %zu special (%.1f ms)",
                     kind->name, source.c_str(), tokens.size(), merges.size(), specials.size(),
                     load_ms);
    }

    // The special tokens in `text`, in order: position and id. At one position the longest
    // wins. Each special's next occurrence is searched again only once passed, so a text
    // with many specials is read once per special, not once per occurrence.
    std::vector<std::pair<size_t, int32_t>> find_specials(std::string_view text) const {
        std::vector<std::pair<size_t, int32_t>> found;
        std::vector<size_t> next(specials.size(), 0);
        for (size_t k = 0; k < specials.size(); ++k)
            next[k] = text.find(tokens[static_cast<size_t>(specials[k])]);
        size_t pos = 0;
        for (;;) {
            size_t best = std::string_view::npos, best_k = 0;
            for (size_t k = 0; k < specials.size(); ++k) {
                if (next[k] != std::string_view::npos && next[k] < pos)
                    next[k] = text.find(tokens[static_cast<size_t>(specials[k])], pos);
                if (next[k] < best) best = next[k], best_k = k;
            }
            if (best == std::string_view::npos) return found;
            found.emplace_back(best, specials[best_k]);
            pos = best + tokens[static_cast<size_t>(specials[best_k])].size();
        }
    }

    void encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
        const bool cacheable = piece.size() <= kMaxCachedWordBytes;
        if (cacheable) {
            std::lock_guard<std::mutex> lock(cache_mutex);
            const auto it = cache.find(std::string(piece));
            if (it != cache.end()) {
                out.insert(out.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        std::vector<int32_t> word(piece.size());
        for (size_t i = 0; i < piece.size(); ++i)
            word[i] = byte_id[static_cast<unsigned char>(piece[i])];
        merges.apply(word);
        out.insert(out.end(), word.begin(), word.end());
        if (!cacheable) return;
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (cache.size() >= kMaxCacheEntries) cache.clear();
        cache.emplace(std::string(piece), std::move(word));
    }

    void encode_plain(std::string_view text, std::vector<int32_t>& out) const {
        qwen2::split_pieces(text, [&](std::string_view piece) {
            cancellation_point();  // a long prompt is a million pieces (base/cancel.h)
            encode_piece(piece, out);
        });
    }
};

// --- loading ---

namespace {

// What a tokenizer.json (or a flat vocab.json) holds that the tokenizer needs, read with a
// SAX parser: the 11 MiB Qwen2 file would take several times longer as a DOM.
class TokenizerJsonReader : public nlohmann::json_sax<nlohmann::json> {
  public:
    struct Added {
        int64_t id = -1;
        std::string content;
        bool special = false;
    };
    std::string model_type;
    std::string end_of_word_suffix;
    bool byte_fallback = false;
    bool has_model = false;
    std::vector<std::pair<std::string, int64_t>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    std::vector<Added> added;

    // `flat`: the whole document is the vocabulary object (vocab.json).
    TokenizerJsonReader(const std::string& source, bool flat) : source_(source), flat_(flat) {
        stack_.push_back({Where::Document, {}, {}});  // so that a bare scalar finds a frame
    }

    bool start_object(std::size_t) override { return open(true); }
    bool start_array(std::size_t) override { return open(false); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool key(string_t& k) override {
        stack_.back().key = std::move(k);
        return true;
    }
    bool string(string_t& s) override {
        Frame& f = stack_.back();
        switch (f.where) {
            case Where::Model:
                if (f.key == "type") model_type = std::move(s);
                if (f.key == "end_of_word_suffix") end_of_word_suffix = std::move(s);
                return true;
            case Where::Merges: {
                const size_t space = s.find(' ');
                if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
                    fail("%s: model.merges entry %zu '%s' is not two tokens separated by a space",
                         source_.c_str(), merges.size(), printable_excerpt(s).c_str());
                merges.emplace_back(s.substr(0, space), s.substr(space + 1));
                return true;
            }
            case Where::MergePair:
                f.parts.push_back(std::move(s));
                return true;
            case Where::AddedToken:
                if (f.key == "content") added.back().content = std::move(s);
                return true;
            case Where::Vocab:
                return bad_id("a string");
            default:
                return true;
        }
    }
    bool number_integer(number_integer_t v) override { return number(v); }
    bool number_unsigned(number_unsigned_t v) override {
        return number(v > INT64_MAX ? INT64_MAX : static_cast<int64_t>(v));
    }
    bool number_float(number_float_t, const string_t&) override {
        return stack_.back().where == Where::Vocab ? bad_id("a fraction") : true;
    }
    bool boolean(bool v) override {
        const Frame& f = stack_.back();
        if (f.where == Where::Model && f.key == "byte_fallback") byte_fallback = v;
        if (f.where == Where::AddedToken && f.key == "special") added.back().special = v;
        return f.where == Where::Vocab ? bad_id("a boolean") : true;
    }
    bool null() override { return stack_.back().where == Where::Vocab ? bad_id("null") : true; }
    bool binary(binary_t&) override { return true; }
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& e) override {
        fail("%s: not valid JSON (at byte %zu): %s", source_.c_str(), position, e.what());
    }

  private:
    enum class Where { Document, Root, Model, Vocab, Merges, MergePair, Added, AddedToken, Other };
    struct Frame {
        Where where;
        std::string key;
        std::vector<std::string> parts;  // a [left, right] merge
    };

    Where child_of(bool object) const {
        const Frame& p = stack_.back();
        if (p.where == Where::Document)
            return object ? (flat_ ? Where::Vocab : Where::Root) : Where::Other;
        if (object) {
            if (p.where == Where::Root && p.key == "model") return Where::Model;
            if (p.where == Where::Model && p.key == "vocab") return Where::Vocab;
            if (p.where == Where::Added) return Where::AddedToken;
        } else {
            if (p.where == Where::Model && p.key == "merges") return Where::Merges;
            if (p.where == Where::Root && p.key == "added_tokens") return Where::Added;
            if (p.where == Where::Merges) return Where::MergePair;
        }
        if (p.where == Where::Vocab) bad_id(object ? "an object" : "an array");
        return Where::Other;
    }
    bool open(bool object) {
        const Where w = child_of(object);
        if (w == Where::Model) has_model = true;
        if (w == Where::AddedToken) added.emplace_back();
        stack_.push_back({w, {}, {}});
        return true;
    }
    bool close() {
        Frame& f = stack_.back();
        if (f.where == Where::MergePair) {
            if (f.parts.size() != 2)
                fail("%s: model.merges entry %zu is not a pair of tokens", source_.c_str(),
                     merges.size());
            merges.emplace_back(std::move(f.parts[0]), std::move(f.parts[1]));
        }
        stack_.pop_back();
        return true;
    }
    bool number(int64_t v) {
        const Frame& f = stack_.back();
        if (f.where == Where::Vocab) {
            if (v < 0 || v > INT32_MAX)
                fail("%s: token '%s' has id %lld, outside 0..%d", source_.c_str(),
                     printable_excerpt(f.key).c_str(), static_cast<long long>(v), INT32_MAX);
            vocab.emplace_back(f.key, v);
        }
        if (f.where == Where::AddedToken && f.key == "id") added.back().id = v;
        return true;
    }
    bool bad_id(const char* what) const {
        fail("%s: token '%s' has %s where an integer id belongs", source_.c_str(),
             printable_excerpt(stack_.back().key).c_str(), what);
    }

    const std::string& source_;
    bool flat_;
    std::vector<Frame> stack_;
};

TokenizerJsonReader read_json(std::string_view text, const std::string& source, bool flat) {
    TokenizerJsonReader reader(source, flat);
    nlohmann::json::sax_parse(text.begin(), text.end(), &reader);
    return reader;
}

// Tokens 0..N-1 from vocab entries (each id used once).
void place_vocab(std::vector<std::pair<std::string, int64_t>>& entries, LlmTokenizer::Impl& impl) {
    if (entries.empty()) fail("%s: the vocabulary is empty", impl.source.c_str());
    const size_t n = entries.size();
    impl.tokens.assign(n, std::string());
    impl.types.assign(n, kNormal);
    std::vector<bool> used(n, false);
    for (auto& [text, id] : entries) {
        if (static_cast<uint64_t>(id) >= n) {
            fail("%s: token '%s' has id %lld, but ids must be 0..%zu (one per entry)",
                 impl.source.c_str(), printable_excerpt(text).c_str(), static_cast<long long>(id),
                 n - 1);
        }
        const auto slot = static_cast<size_t>(id);
        if (used[slot]) {
            fail("%s: id %lld is given to both '%s' and '%s'", impl.source.c_str(),
                 static_cast<long long>(id), printable_excerpt(impl.tokens[slot]).c_str(),
                 printable_excerpt(text).c_str());
        }
        used[slot] = true;
        impl.tokens[slot] = std::move(text);
    }
}

// added_tokens: an entry already in the vocabulary (same id) becomes special; the others
// follow the vocabulary, their ids contiguous.
void place_added(std::vector<TokenizerJsonReader::Added>& added, LlmTokenizer::Impl& impl) {
    std::sort(added.begin(), added.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    for (auto& a : added) {
        const uint8_t type = a.special ? kControl : kUserDefined;
        if (a.id >= 0 && static_cast<size_t>(a.id) < impl.tokens.size()) {
            if (impl.tokens[static_cast<size_t>(a.id)] != a.content)
                fail("%s: added token '%s' has id %lld, which the vocabulary gives to '%s'",
                     impl.source.c_str(), printable_excerpt(a.content).c_str(),
                     static_cast<long long>(a.id),
                     printable_excerpt(impl.tokens[static_cast<size_t>(a.id)]).c_str());
            impl.types[static_cast<size_t>(a.id)] = type;
            continue;
        }
        if (a.id != static_cast<int64_t>(impl.tokens.size()))
            fail("%s: added token '%s' has id %lld; the next free id is %zu", impl.source.c_str(),
                 printable_excerpt(a.content).c_str(), static_cast<long long>(a.id),
                 impl.tokens.size());
        impl.add_token(std::move(a.content), type);
    }
}

std::unique_ptr<LlmTokenizer::Impl> new_impl(const std::string& source, const LlmVocabulary& kind) {
    auto impl = std::make_unique<LlmTokenizer::Impl>();
    impl->source = source;
    impl->kind = &kind;
    return impl;
}

const MetadataValue* find_key(const std::map<std::string, MetadataValue>& md, const char* key) {
    const auto it = md.find(key);
    return it == md.end() ? nullptr : &it->second;
}

const std::string* string_of(const std::map<std::string, MetadataValue>& md, const char* key) {
    const MetadataValue* v = find_key(md, key);
    return v ? std::get_if<std::string>(&v->value) : nullptr;
}

const MetadataArray& array_of(const std::map<std::string, MetadataValue>& md, const char* key,
                              const std::string& source) {
    const MetadataValue* v = find_key(md, key);
    const auto* a = v ? std::get_if<MetadataArray>(&v->value) : nullptr;
    if (!a) fail("%s: GGUF metadata has no array %s", source.c_str(), key);
    return *a;
}

const std::string& string_entry(const MetadataArray& a, size_t i, const char* key,
                                const std::string& source) {
    const auto* s = std::get_if<std::string>(&a[i].value);
    if (!s) fail("%s: GGUF metadata %s entry %zu is not a string", source.c_str(), key, i);
    return *s;
}

int64_t integer_entry(const MetadataArray& a, size_t i, const char* key,
                      const std::string& source) {
    if (const auto* v = std::get_if<int64_t>(&a[i].value)) return *v;
    if (const auto* u = std::get_if<uint64_t>(&a[i].value))
        return *u > INT64_MAX ? -1 : static_cast<int64_t>(*u);
    fail("%s: GGUF metadata %s entry %zu is not an integer", source.c_str(), key, i);
}

}  // namespace

LlmTokenizer::LlmTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LlmTokenizer::LlmTokenizer(LlmTokenizer&&) noexcept = default;
LlmTokenizer& LlmTokenizer::operator=(LlmTokenizer&&) noexcept = default;
LlmTokenizer::~LlmTokenizer() = default;

LlmTokenizer LlmTokenizer::from_json_bytes(std::string_view json, const std::string& source,
                                           const LlmVocabulary& kind) {
    const auto t0 = std::chrono::steady_clock::now();
    TokenizerJsonReader r = read_json(json, source, false);
    if (!r.has_model)
        fail("%s: not a Hugging Face tokenizer.json (no \"model\" object)", source.c_str());
    if (r.model_type != "BPE") {
        fail("%s: a tokenizer.json of model type \"%s\", not \"BPE\": not a %s tokenizer",
             source.c_str(), r.model_type.empty() ? "(none)" : r.model_type.c_str(), kind.name);
    }
    if (!r.end_of_word_suffix.empty() || r.byte_fallback) {
        fail("%s: a BPE tokenizer.json with %s: not a byte-level %s tokenizer", source.c_str(),
             r.byte_fallback ? "byte fallback" : "an end-of-word suffix (CLIP's)", kind.name);
    }
    auto impl = new_impl(source, kind);
    place_vocab(r.vocab, *impl);
    place_added(r.added, *impl);
    impl->index_tokens();
    impl->merges.reserve(r.merges.size());
    for (size_t i = 0; i < r.merges.size(); ++i)
        impl->add_merge(r.merges[i].first, r.merges[i].second,
                        strfmt("%s: model.merges entry %zu", source.c_str(), i));
    impl->finish(t0);
    return LlmTokenizer(std::move(impl));
}

LlmTokenizer LlmTokenizer::from_file(const std::string& path, const LlmVocabulary& kind) {
    return from_json_bytes(read_tokenizer_file(path, "tokenizer.json"), path, kind);
}

LlmTokenizer LlmTokenizer::from_vocab_merges_bytes(std::string_view vocab_json,
                                                   std::string_view merges_txt,
                                                   const std::string& source,
                                                   const LlmVocabulary& kind) {
    const auto t0 = std::chrono::steady_clock::now();
    TokenizerJsonReader r = read_json(vocab_json, source + " (vocab.json)", true);
    auto impl = new_impl(source, kind);
    place_vocab(r.vocab, *impl);
    // The specials are marked in the vocabulary, or added after it once the lookup, which
    // views the vocabulary's strings, is done with (adding moves the strings).
    std::vector<std::pair<std::string, uint8_t>> missing;
    {
        std::unordered_map<std::string_view, size_t> where;
        for (size_t i = 0; i < impl->tokens.size(); ++i) where.emplace(impl->tokens[i], i);
        for (size_t i = 0; i < kind.specials.size(); ++i) {
            const uint8_t type = i < kind.control_count ? kControl : kUserDefined;
            const auto it = where.find(kind.specials[i]);
            if (it == where.end())
                missing.emplace_back(kind.specials[i], type);
            else
                impl->types[it->second] = type;
        }
    }
    for (auto& [text, type] : missing) impl->add_token(std::move(text), type);
    impl->index_tokens();
    const std::vector<std::string_view> lines = split_lines(merges_txt);
    impl->merges.reserve(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].empty() || (i == 0 && lines[i].starts_with("#version"))) continue;
        impl->add_merge_line(lines[i], strfmt("%s (merges.txt) line %zu", source.c_str(), i + 1));
    }
    impl->finish(t0);
    return LlmTokenizer(std::move(impl));
}

LlmTokenizer LlmTokenizer::from_vocab_merges(const std::string& vocab_json_path,
                                             const std::string& merges_txt_path,
                                             const LlmVocabulary& kind) {
    const std::string vocab = read_tokenizer_file(vocab_json_path, "vocab.json");
    const std::string merges = read_tokenizer_file(merges_txt_path, "merges.txt");
    return from_vocab_merges_bytes(vocab, merges, vocab_json_path + " + " + merges_txt_path, kind);
}

LlmTokenizer LlmTokenizer::from_tekken_json_bytes(std::string_view json,
                                                  const std::string& source) {
    const auto t0 = std::chrono::steady_clock::now();
    TekkenVocabulary v = read_tekken_json(json, source);
    auto impl = new_impl(source, mistral_vocabulary());
    impl->tokens.reserve(v.specials.size() + v.tokens.size());
    for (std::string& s : v.specials) impl->add_token(std::move(s), kControl);
    const auto first = static_cast<int32_t>(impl->tokens.size());
    for (const std::string& bytes : v.tokens) {
        std::string symbols;
        for (char c : bytes) symbols += bpe::byte_symbol(static_cast<uint8_t>(c));
        impl->add_token(std::move(symbols), kNormal);
    }
    impl->index_tokens(/*shadowing=*/true);
    impl->byte_id.fill(-1);
    for (size_t r = 0; r < v.tokens.size(); ++r) {
        if (v.tokens[r].size() != 1) continue;
        int32_t& id = impl->byte_id[static_cast<uint8_t>(v.tokens[r][0])];
        if (id < 0) id = first + static_cast<int32_t>(r);
    }
    for (int b = 0; b < 256; ++b)
        if (impl->byte_id[b] < 0)
            fail("%s: no token of the single byte 0x%02X (tiktoken vocabularies have all 256)",
                 source.c_str(), b);
    impl->byte_ids_known = true;
    // A token's merge: BPE of its bytes with the merges of the lower ranks ends in the two
    // tokens it joins (as Hugging Face's tiktoken converter finds them). A token BPE cannot
    // reach that way is left without a merge.
    impl->merges.reserve(v.tokens.size());
    std::vector<int32_t> word;
    for (size_t r = 0; r < v.tokens.size(); ++r) {
        const std::string& bytes = v.tokens[r];
        if (bytes.size() < 2) continue;
        word.resize(bytes.size());
        for (size_t i = 0; i < bytes.size(); ++i)
            word[i] = impl->byte_id[static_cast<uint8_t>(bytes[i])];
        impl->merges.apply(word);
        if (word.size() == 2) impl->merges.add(word[0], word[1], first + static_cast<int32_t>(r));
    }
    impl->finish(t0);
    return LlmTokenizer(std::move(impl));
}

LlmTokenizer LlmTokenizer::from_tekken_file(const std::string& path) {
    return from_tekken_json_bytes(read_tokenizer_file(path, "tekken.json"), path);
}

bool LlmTokenizer::gguf_has_vocab(const std::map<std::string, MetadataValue>& md,
                                  const LlmVocabulary& kind) {
    const std::string* model = string_of(md, kKeyModel);
    const std::string* pre = string_of(md, kKeyPre);
    return model && *model == kModelName && (!pre || *pre == kind.gguf_pre) &&
           find_key(md, kKeyTokens);
}

LlmTokenizer LlmTokenizer::from_gguf_metadata(const std::map<std::string, MetadataValue>& md,
                                              const std::string& source,
                                              const LlmVocabulary& kind) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string* model = string_of(md, kKeyModel);
    if (!model || *model != kModelName || !find_key(md, kKeyTokens)) {
        fail("%s: GGUF metadata carries no byte-level BPE vocabulary (%s \"%s\" with %s)",
             source.c_str(), kKeyModel, kModelName, kKeyTokens);
    }
    if (const std::string* pre = string_of(md, kKeyPre); pre && *pre != kind.gguf_pre) {
        fail(
            "%s: GGUF metadata %s is \"%s\": the vocabulary of another model family, not "
            "%s's (\"%s\")",
            source.c_str(), kKeyPre, pre->c_str(), kind.name, kind.gguf_pre);
    }
    const MetadataArray& tokens = array_of(md, kKeyTokens, source);
    const MetadataArray& merges = array_of(md, kKeyMerges, source);
    const MetadataArray* types =
        find_key(md, kKeyTypes) ? &array_of(md, kKeyTypes, source) : nullptr;
    if (types && types->size() != tokens.size())
        fail("%s: GGUF metadata %s has %zu entries for %zu tokens", source.c_str(), kKeyTypes,
             types->size(), tokens.size());
    auto impl = new_impl(source + " (GGUF metadata)", kind);
    impl->tokens.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        int64_t type = kNormal;
        if (types) {
            type = integer_entry(*types, i, kKeyTypes, source);
        } else if (std::find(kind.specials.begin(), kind.specials.end(),
                             string_entry(tokens, i, kKeyTokens, source)) != kind.specials.end()) {
            type = kControl;  // no types given: the vocabulary's own special tokens
        }
        if (type < kNormal || type > kByte)
            fail("%s: GGUF metadata %s entry %zu is %lld, not a token type (1..6)", source.c_str(),
                 kKeyTypes, i, static_cast<long long>(type));
        impl->add_token(string_entry(tokens, i, kKeyTokens, source), static_cast<uint8_t>(type));
    }
    impl->index_tokens();
    impl->merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i)
        impl->add_merge_line(string_entry(merges, i, kKeyMerges, source),
                             strfmt("%s: %s entry %zu", source.c_str(), kKeyMerges, i));
    impl->finish(t0);
    return LlmTokenizer(std::move(impl));
}

std::map<std::string, MetadataValue> LlmTokenizer::to_gguf_metadata() const {
    MetadataArray tokens, types, merges;
    tokens.reserve(impl_->tokens.size());
    types.reserve(impl_->tokens.size());
    for (size_t i = 0; i < impl_->tokens.size(); ++i) {
        tokens.emplace_back().value = impl_->tokens[i];
        types.emplace_back().value = static_cast<int64_t>(impl_->types[i]);
    }
    merges.reserve(impl_->merges.size());
    for (size_t r = 0; r < impl_->merges.size(); ++r) {
        const auto& [a, b] = impl_->merges.pair(r);
        merges.push_back(MetadataValue{impl_->tokens[static_cast<size_t>(a)] + " " +
                                       impl_->tokens[static_cast<size_t>(b)]});
    }
    std::map<std::string, MetadataValue> md;
    md[kKeyModel] = MetadataValue{std::string(kModelName)};
    md[kKeyPre] = MetadataValue{std::string(impl_->kind->gguf_pre)};
    md[kKeyTokens] = MetadataValue{std::move(tokens)};
    md[kKeyTypes] = MetadataValue{std::move(types)};
    md[kKeyMerges] = MetadataValue{std::move(merges)};
    md[kKeyEos] = MetadataValue{static_cast<uint64_t>(impl_->eos)};
    md[kKeyPad] = MetadataValue{static_cast<uint64_t>(impl_->pad)};
    if (impl_->bos >= 0) md[kKeyBos] = MetadataValue{static_cast<uint64_t>(impl_->bos)};
    return md;
}

// --- encoding ---

std::vector<int32_t> LlmTokenizer::encode(std::string_view text) const {
    std::vector<int32_t> out;
    size_t pos = 0;
    for (const auto& [at, id] : impl_->find_specials(text)) {
        impl_->encode_plain(text.substr(pos, at - pos), out);
        out.push_back(id);
        pos = at + impl_->tokens[static_cast<size_t>(id)].size();
    }
    impl_->encode_plain(text.substr(pos), out);
    return out;
}

std::string LlmTokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string out;
    for (int32_t id : ids) {
        const std::string& t = token(id);
        if (impl_->special(id)) {
            out += t;
            continue;
        }
        for (char32_t cp : unicode::decode_utf8(t)) {
            const int b = bpe::byte_of_code_point(cp);
            if (b >= 0) {
                out.push_back(static_cast<char>(b));
            } else {
                unicode::append_utf8(out, cp);
            }
        }
    }
    return out;
}

int32_t LlmTokenizer::id_of(std::string_view token) const {
    return impl_->find(token);
}

const std::string& LlmTokenizer::token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= impl_->tokens.size()) {
        fail("%s tokenizer: id %d is outside the vocabulary (0..%zu)", impl_->kind->name, id,
             impl_->tokens.size() - 1);
    }
    return impl_->tokens[static_cast<size_t>(id)];
}

bool LlmTokenizer::is_special(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < impl_->tokens.size() && impl_->special(id);
}

int32_t LlmTokenizer::eos_id() const {
    return impl_->eos;
}
int32_t LlmTokenizer::pad_id() const {
    return impl_->pad;
}
int32_t LlmTokenizer::bos_id() const {
    return impl_->bos;
}
const LlmVocabulary& LlmTokenizer::kind() const {
    return *impl_->kind;
}
size_t LlmTokenizer::vocab_size() const {
    return impl_->tokens.size();
}
size_t LlmTokenizer::merge_count() const {
    return impl_->merges.size();
}

// --- finding the vocabulary ---

namespace {

// The vocabulary files in `dir`: tokenizer.json, else tekken.json (Mistral), else vocab.json +
// merges.txt. Returns nullopt with the reason in `why` when there are none; one of vocab.json
// / merges.txt without the other is an error.
std::optional<LlmTokenizer> load_dir(const fs::path& dir, const LlmVocabulary& kind,
                                     std::string& why) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        why = "no such folder";
        return std::nullopt;
    }
    if (fs::is_regular_file(dir / "tokenizer.json", ec))
        return LlmTokenizer::from_file((dir / "tokenizer.json").string(), kind);
    const bool tekken = &kind == &mistral_vocabulary();
    if (tekken && fs::is_regular_file(dir / "tekken.json", ec))
        return LlmTokenizer::from_tekken_file((dir / "tekken.json").string());
    const bool vocab = fs::is_regular_file(dir / "vocab.json", ec);
    const bool merges = fs::is_regular_file(dir / "merges.txt", ec);
    if (vocab && merges) {
        return LlmTokenizer::from_vocab_merges((dir / "vocab.json").string(),
                                               (dir / "merges.txt").string(), kind);
    }
    if (vocab || merges) {
        fail("%s holds %s but not %s; the %s tokenizer needs both (or tokenizer.json)",
             dir.string().c_str(), vocab ? "vocab.json" : "merges.txt",
             vocab ? "merges.txt" : "vocab.json", kind.name);
    }
    why = tekken ? "no tokenizer.json / tekken.json / vocab.json + merges.txt there"
                 : "no tokenizer.json / vocab.json + merges.txt there";
    return std::nullopt;
}

// --tokenizer-dir / SD_TOKENIZER_DIR: ROOT/<kind.folder>/; a bad file there is an error.
std::optional<LlmTokenizer> from_named_dir(const std::string& root, const char* label,
                                           const LlmVocabulary& kind,
                                           std::vector<std::string>& searched) {
    const fs::path dir = fs::path(root) / kind.folder;
    std::string why;
    auto t = load_dir(dir, kind, why);
    if (t) {
        SD_LOG_INFO("%s tokenizer: %s (%s)", kind.name, dir.string().c_str(), label);
    } else {
        searched.push_back(strfmt("%s: %s/: %s", label, dir.string().c_str(), why.c_str()));
    }
    return t;
}

// Near a model file: files that are not a vocabulary of `kind` (a CLIP vocab, a T5
// tokenizer.json, another LLM's) are skipped, their reason recorded.
std::optional<LlmTokenizer> from_near(const std::string& path, const char* label,
                                      const LlmVocabulary& kind,
                                      std::vector<std::string>& searched) {
    if (path.empty()) {
        searched.push_back(strfmt("%s: no path given", label));
        return std::nullopt;
    }
    for (const fs::path& dir : folders_near(path, "tokenizer")) {
        std::string why;
        try {
            if (auto t = load_dir(dir, kind, why)) {
                SD_LOG_INFO("%s tokenizer: %s (%s)", kind.name, dir.string().c_str(), label);
                return t;
            }
        } catch (const Error& e) {
            why = e.what();
        }
        searched.push_back(strfmt("%s: %s/: %s", label, dir.string().c_str(), why.c_str()));
    }
    return std::nullopt;
}

std::optional<LlmTokenizer> from_gguf(const TensorFile* file, const char* label,
                                      const LlmVocabulary& kind,
                                      std::vector<std::string>& searched) {
    if (!file) {
        searched.push_back(strfmt("GGUF metadata of the %s: no file given", label));
        return std::nullopt;
    }
    const auto& md = file->metadata;
    const std::string* model = string_of(md, kKeyModel);
    const std::string* pre = string_of(md, kKeyPre);
    if (!LlmTokenizer::gguf_has_vocab(md, kind)) {
        std::string why = strfmt("no %s \"%s\" with %s", kKeyModel, kModelName, kKeyTokens);
        if (model && *model == kModelName && pre)
            why = strfmt("%s is \"%s\", not \"%s\"", kKeyPre, pre->c_str(), kind.gguf_pre);
        searched.push_back(
            strfmt("GGUF metadata of the %s %s: %s", label, file->path.c_str(), why.c_str()));
        return std::nullopt;
    }
    SD_LOG_INFO("%s tokenizer: GGUF metadata of %s", kind.name, file->path.c_str());
    return LlmTokenizer::from_gguf_metadata(md, file->path, kind);
}

}  // namespace

LlmTokenizer find_llm_tokenizer(const LlmTokenizerSearch& search) {
    const LlmVocabulary& kind = *search.kind;
    std::vector<std::string> searched;
    std::optional<LlmTokenizer> named;
    if (try_named_tokenizer_dirs(search.tokenizer_dir, search.use_env, searched,
                                 [&](const std::string& root, const char* label) {
                                     named = from_named_dir(root, label, kind, searched);
                                     return named.has_value();
                                 })) {
        return std::move(*named);
    }
    if (auto t = from_near(search.llm_path, "beside the LLM file", kind, searched))
        return std::move(*t);
    if (auto t = from_near(search.model_path, "beside the model", kind, searched))
        return std::move(*t);
    if (auto t = from_gguf(search.llm_file, "LLM file", kind, searched)) return std::move(*t);
    if (auto t = from_gguf(search.model_file, "model file", kind, searched)) return std::move(*t);
    if (search.use_builtin && kind.builtin) {
        const BuiltinVocabulary v = builtin_qwen2_vocabulary();
        SD_LOG_INFO("%s tokenizer: the %s", kind.name, v.description);
        return LlmTokenizer::from_vocab_merges_bytes(v.vocab_json, v.merges_txt, v.description,
                                                     kind);
    }
    if (&kind == &mistral_vocabulary()) {
        fail(
            "no Mistral tokenizer vocabulary found. The Mistral text encoder needs tekken.json "
            "or tokenizer.json (the Mistral-Small-3.2 tokenizer files), vocab.json and "
            "merges.txt, or a GGUF LLM file that carries them (llama.cpp's, as unsloth's "
            "Mistral-Small-3.2-24B-Instruct-2506 GGUF files do). Searched, in order:%s\nPut them "
            "in DIR/mistral/ and pass --tokenizer-dir DIR or set SD_TOKENIZER_DIR=DIR, or place "
            "them beside the LLM file.",
            numbered_places(searched).c_str());
    }
    fail(
        "no Qwen2 tokenizer vocabulary found. The LLM text encoder needs tokenizer.json, or "
        "vocab.json and merges.txt (the Qwen2.5 / Qwen3 tokenizer files), or a GGUF LLM file "
        "that carries them. Searched, in order:%s\nPut them in DIR/qwen2/ and pass "
        "--tokenizer-dir DIR or set SD_TOKENIZER_DIR=DIR, or place them beside the LLM file.",
        numbered_places(searched).c_str());
}

}  // namespace sd
