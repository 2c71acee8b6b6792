#include "tokenizer/clip_tokenizer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/cancel.h"
#include "base/error.h"
#include "base/log.h"
#include "tokenizer/builtin_vocabularies.h"
#include "tokenizer/byte_bpe.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/unicode_text.h"

namespace sd {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEndOfWord = "</w>";
constexpr std::string_view kStartOfText = "<|startoftext|>";
constexpr std::string_view kEndOfText = "<|endoftext|>";

constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyMerges = "tokenizer.ggml.merges";
constexpr const char* kKeyBos = "tokenizer.ggml.bos_token_id";
constexpr const char* kKeyEos = "tokenizer.ggml.eos_token_id";
constexpr const char* kModelName = "clip";

constexpr size_t kMaxCacheEntries = 1u << 16;
constexpr size_t kMaxCachedWordBytes = 256;

// vocab.json: one flat object of token -> integer id, read without building a DOM.
class VocabSax : public nlohmann::json_sax<nlohmann::json> {
  public:
    explicit VocabSax(const std::string& source) : source_(source) {}
    std::vector<std::pair<std::string, int64_t>> entries;

    bool start_object(std::size_t) override {
        if (depth_++ != 0) fail_value("an object");
        return true;
    }
    bool end_object() override {
        --depth_;
        return true;
    }
    bool key(string_t& k) override {
        key_ = k;
        return true;
    }
    bool number_integer(number_integer_t v) override { return add(v); }
    bool number_unsigned(number_unsigned_t v) override {
        return add(v > INT64_MAX ? INT64_MAX : static_cast<int64_t>(v));
    }
    bool number_float(number_float_t, const string_t& raw) override {
        fail_value(("the number " + raw).c_str());
    }
    bool null() override { fail_value("null"); }
    bool boolean(bool) override { fail_value("a boolean"); }
    bool string(string_t&) override { fail_value("a string"); }
    bool binary(binary_t&) override { fail_value("binary data"); }
    bool start_array(std::size_t) override { fail_value("an array"); }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& e) override {
        fail("%s: not valid JSON (at byte %zu): %s", source_.c_str(), position, e.what());
    }

  private:
    bool add(int64_t id) {
        if (depth_ != 1) fail("%s: expected a JSON object of token -> id", source_.c_str());
        if (id < 0 || id > INT32_MAX) {
            fail("%s: token '%s' has id %lld, outside 0..%d", source_.c_str(),
                 printable_excerpt(key_).c_str(), static_cast<long long>(id), INT32_MAX);
        }
        entries.emplace_back(std::move(key_), id);
        return true;
    }
    [[noreturn]] void fail_value(const char* what) {
        if (depth_ == 0) fail("%s: expected a JSON object of token -> id", source_.c_str());
        fail("%s: token '%s' has %s where an integer id belongs", source_.c_str(),
             printable_excerpt(key_).c_str(), what);
    }

    const std::string& source_;
    std::string key_;
    int depth_ = 0;
};

// The keys of `ids` view the strings in `tokens`, whose buffers stay put when a Vocabulary
// is moved (the vector's storage moves as a whole).
struct Vocabulary {
    std::vector<std::string> tokens;  // by id
    std::unordered_map<std::string_view, int32_t> ids;
};

Vocabulary vocabulary_from_entries(std::vector<std::pair<std::string, int64_t>> entries,
                                   const std::string& source) {
    if (entries.empty()) fail("%s: the vocabulary is empty", source.c_str());
    Vocabulary v;
    const size_t n = entries.size();
    v.tokens.resize(n);
    std::vector<bool> used(n, false);
    for (auto& [token, id] : entries) {
        if (static_cast<uint64_t>(id) >= n) {
            fail("%s: token '%s' has id %lld, but ids must be 0..%zu (one per entry)",
                 source.c_str(), printable_excerpt(token).c_str(), static_cast<long long>(id),
                 n - 1);
        }
        const auto slot = static_cast<size_t>(id);
        if (used[slot]) {
            fail("%s: id %lld is given to both '%s' and '%s'", source.c_str(),
                 static_cast<long long>(id), printable_excerpt(v.tokens[slot]).c_str(),
                 printable_excerpt(token).c_str());
        }
        used[slot] = true;
        v.tokens[slot] = std::move(token);
    }
    v.ids.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
        if (!v.ids.emplace(v.tokens[i], static_cast<int32_t>(i)).second)
            fail("%s: token '%s' appears twice", source.c_str(),
                 printable_excerpt(v.tokens[i]).c_str());
    }
    return v;
}

Vocabulary parse_vocab_json(std::string_view text, const std::string& source) {
    VocabSax sax(source);
    nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
    return vocabulary_from_entries(std::move(sax.entries), source);
}

// Classes of the stable-diffusion.cpp pre-tokenizer: its std::regex in the "C" locale.
bool ascii_space(char32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D);
}
bool ascii_alpha(char32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool ascii_digit(char32_t c) {
    return c >= '0' && c <= '9';
}

struct CharClasses {
    bool (*space)(char32_t);
    bool (*letter)(char32_t);
    bool (*digit)(char32_t);
};

constexpr CharClasses kAsciiClasses{ascii_space, ascii_alpha, ascii_digit};
constexpr CharClasses kUnicodeClasses{unicode::is_whitespace, unicode::is_letter,
                                      unicode::is_number};

// Length of a contraction ('s 't 're 've 'm 'll 'd) starting at text[i], or 0.
size_t contraction_length(std::u32string_view text, size_t i) {
    if (text[i] != U'\'' || i + 1 >= text.size()) return 0;
    const char32_t c1 = text[i + 1];
    if (c1 == U's' || c1 == U't' || c1 == U'm' || c1 == U'd') return 2;
    if (i + 2 >= text.size()) return 0;
    const char32_t c2 = text[i + 2];
    if ((c1 == U'r' && c2 == U'e') || (c1 == U'v' && c2 == U'e') || (c1 == U'l' && c2 == U'l'))
        return 3;
    return 0;
}

// The words of one stretch of text, as the pattern
//   's|'t|'re|'ve|'m|'ll|'d|[[:alpha:]]+|[[:digit:]]|[^[:space:][:alpha:][:digit:]]+
// finds them (leftmost alternative first, whitespace between matches skipped).
template <class Emit>
void split_words(std::u32string_view text, const CharClasses& cls, Emit&& emit) {
    size_t i = 0;
    while (i < text.size()) {
        const char32_t c = text[i];
        size_t len = contraction_length(text, i);
        if (len == 0) {
            if (cls.letter(c)) {
                while (i + len < text.size() && cls.letter(text[i + len])) ++len;
            } else if (cls.digit(c)) {
                len = 1;
            } else if (!cls.space(c)) {
                auto other = [&](char32_t x) {
                    return !cls.space(x) && !cls.letter(x) && !cls.digit(x);
                };
                while (i + len < text.size() && other(text[i + len])) ++len;
            }
        }
        if (len == 0) {
            ++i;  // whitespace
            continue;
        }
        emit(text.substr(i, len));
        i += len;
    }
}

// whitespace_clean(): runs of whitespace become one space, ends stripped; then lower case.
std::u32string normalize(std::u32string_view text, const CharClasses& cls, bool unicode_lower) {
    std::u32string out;
    out.reserve(text.size());
    bool pending_space = false;
    for (char32_t c : text) {
        if (cls.space(c)) {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out.push_back(U' ');
        pending_space = false;
        out.push_back(c);
    }
    if (unicode_lower) return unicode::to_lower(out);
    for (char32_t& c : out) {
        if (c >= U'A' && c <= U'Z') c += 32;
    }
    return out;
}

// Bytes of a string as code points 0..255 (the SdCpp pre-tokenizer works on bytes).
std::u32string widen_bytes(std::string_view s) {
    std::u32string out(s.size(), 0);
    for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<unsigned char>(s[i]);
    return out;
}

std::string narrow_bytes(std::u32string_view s) {
    std::string out(s.size(), '\0');
    for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<char>(s[i]);
    return out;
}

}  // namespace

struct ClipTokenizer::Impl {
    std::string source;
    Vocabulary vocab;
    bpe::Merges merges;
    std::array<int32_t, 256> byte_id{};      // the byte's symbol inside a word
    std::array<int32_t, 256> byte_end_id{};  // the byte's symbol + "</w>" ending a word
    std::unordered_map<char32_t, uint8_t> byte_of_code_point;
    int32_t bos = -1, eos = -1;
    PreTokenizer mode = PreTokenizer::SdCpp;

    std::string joined_;  // scratch for add_merge

    mutable std::mutex cache_mutex;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

    int32_t find(std::string_view token) const {
        auto it = vocab.ids.find(token);
        return it == vocab.ids.end() ? -1 : it->second;
    }

    void bind_special_tokens() {
        for (int b = 0; b < 256; ++b) {
            const std::string sym = bpe::byte_symbol(static_cast<uint8_t>(b));
            byte_id[b] = find(sym);
            byte_end_id[b] = find(sym + std::string(kEndOfWord));
            if (byte_id[b] < 0 || byte_end_id[b] < 0) {
                fail(
                    "%s: the vocabulary lacks the byte token '%s' or '%s</w>' (a byte-level "
                    "BPE vocabulary has all 512)",
                    source.c_str(), sym.c_str(), sym.c_str());
            }
            byte_of_code_point[bpe::byte_code_points()[b]] = static_cast<uint8_t>(b);
        }
        bos = find(kStartOfText);
        eos = find(kEndOfText);
        if (bos < 0 || eos < 0) {
            fail("%s: the vocabulary lacks the special token %s", source.c_str(),
                 bos < 0 ? "<|startoftext|>" : "<|endoftext|>");
        }
    }

    // `where` names the entry's place in messages ("DIR/merges.txt line").
    void add_merge(std::string_view line, const std::string& where, size_t number) {
        const size_t space = line.find(' ');
        if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos) {
            fail("%s %zu: expected two tokens separated by one space, got '%s'", where.c_str(),
                 number, printable_excerpt(line).c_str());
        }
        const std::string_view a = line.substr(0, space), b = line.substr(space + 1);
        joined_.assign(a).append(b);
        const int32_t ia = find(a), ib = find(b), ir = find(joined_);
        if (ia < 0 || ib < 0 || ir < 0) {
            const std::string_view missing = ia < 0 ? a : ib < 0 ? b : std::string_view(joined_);
            fail("%s %zu: merge '%s' uses '%s', which is not in the vocabulary", where.c_str(),
                 number, printable_excerpt(line).c_str(), printable_excerpt(missing).c_str());
        }
        if (!merges.add(ia, ib, ir)) {
            fail("%s %zu: merge '%s' appears twice", where.c_str(), number,
                 printable_excerpt(line).c_str());
        }
    }

    // Byte-level BPE of one word (bpe::Merges::apply, as CLIP's bpe() does); the last byte's
    // symbol carries "</w>".
    void bpe(std::string_view word, std::vector<int32_t>& out) const {
        if (word.empty()) return;
        std::vector<int32_t> ids(word.size());
        for (size_t i = 0; i < word.size(); ++i) {
            const auto byte = static_cast<uint8_t>(word[i]);
            ids[i] = i + 1 == word.size() ? byte_end_id[byte] : byte_id[byte];
        }
        merges.apply(ids);
        out.insert(out.end(), ids.begin(), ids.end());
    }

    void encode_word(std::string_view word, std::vector<int32_t>& out) const {
        cancellation_point();  // a long prompt is a million words (base/cancel.h)
        const bool cacheable = word.size() <= kMaxCachedWordBytes;
        std::string key(cacheable ? word : std::string_view());
        if (cacheable) {
            std::lock_guard<std::mutex> lock(cache_mutex);
            auto it = cache.find(key);
            if (it != cache.end()) {
                out.insert(out.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        const size_t start = out.size();
        bpe(word, out);
        if (!cacheable) return;
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (cache.size() >= kMaxCacheEntries) cache.clear();
        cache.emplace(std::move(key), std::vector<int32_t>(out.begin() + start, out.end()));
    }

    void encode_plain(std::string_view text, std::vector<int32_t>& out) const {
        if (mode == PreTokenizer::SdCpp) {
            split_words(widen_bytes(text), kAsciiClasses,
                        [&](std::u32string_view w) { encode_word(narrow_bytes(w), out); });
        } else {
            split_words(unicode::decode_utf8(text), kUnicodeClasses,
                        [&](std::u32string_view w) { encode_word(unicode::encode_utf8(w), out); });
        }
    }

    std::string normalized(std::string_view text) const {
        const std::string valid = unicode::sanitize_utf8(text);
        if (mode == PreTokenizer::SdCpp)
            return narrow_bytes(normalize(widen_bytes(valid), kAsciiClasses, false));
        return unicode::encode_utf8(normalize(unicode::decode_utf8(valid), kUnicodeClasses, true));
    }

    std::vector<int32_t> encode(std::string_view raw) const {
        const std::string text = normalized(raw);
        std::vector<int32_t> out;
        size_t pos = 0;
        while (pos < text.size()) {
            const size_t s = text.find(kStartOfText, pos), e = text.find(kEndOfText, pos);
            const size_t special = std::min(s, e);
            const std::string_view plain =
                std::string_view(text).substr(pos, std::min(special, text.size()) - pos);
            encode_plain(plain, out);
            if (special == std::string::npos) break;
            out.push_back(special == s ? bos : eos);
            pos = special + (special == s ? kStartOfText.size() : kEndOfText.size());
        }
        return out;
    }

    static std::unique_ptr<Impl> create(const std::string& source, Vocabulary vocab) {
        auto impl = std::make_unique<Impl>();
        impl->source = source;
        impl->vocab = std::move(vocab);
        impl->bind_special_tokens();
        return impl;
    }

    void finish_load(std::chrono::steady_clock::time_point t0) {
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        SD_LOG_DEBUG("CLIP tokenizer from %s: %zu tokens, %zu merges (%.1f ms)", source.c_str(),
                     vocab.tokens.size(), merges.size(), ms);
    }
};

namespace {

const MetadataValue* find_key(const std::map<std::string, MetadataValue>& md, const char* key) {
    auto it = md.find(key);
    return it == md.end() ? nullptr : &it->second;
}

const MetadataArray& string_array(const MetadataValue* v, const char* key,
                                  const std::string& source) {
    if (!v) fail("%s: metadata has no %s", source.c_str(), key);
    const auto* arr = std::get_if<MetadataArray>(&v->value);
    if (!arr) fail("%s: metadata %s is not an array of strings", source.c_str(), key);
    for (size_t i = 0; i < arr->size(); ++i) {
        if (!std::holds_alternative<std::string>((*arr)[i].value)) {
            fail("%s: metadata %s entry %zu is not a string", source.c_str(), key, i);
        }
    }
    return *arr;
}

void check_special_id(const std::map<std::string, MetadataValue>& md, const char* key,
                      int32_t expected, const std::string& source) {
    const MetadataValue* v = find_key(md, key);
    if (!v) return;
    long long id = -1;
    if (const auto* u = std::get_if<uint64_t>(&v->value)) {
        id = *u > INT32_MAX ? -1 : static_cast<long long>(*u);
    } else if (const auto* s = std::get_if<int64_t>(&v->value)) {
        id = *s;
    } else {
        fail("%s: metadata %s is not an integer", source.c_str(), key);
    }
    if (id != expected) {
        fail("%s: metadata %s is %s, but the vocabulary has that token at id %d", source.c_str(),
             key, v->to_string().c_str(), expected);
    }
}

}  // namespace

ClipTokenizer::ClipTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClipTokenizer::ClipTokenizer(ClipTokenizer&&) noexcept = default;
ClipTokenizer& ClipTokenizer::operator=(ClipTokenizer&&) noexcept = default;
ClipTokenizer::~ClipTokenizer() = default;

ClipTokenizer ClipTokenizer::load_texts(std::string_view vocab_json, const std::string& vocab_name,
                                        std::string_view merges_txt,
                                        const std::string& merges_name) {
    const auto t0 = std::chrono::steady_clock::now();
    auto impl = Impl::create(vocab_name, parse_vocab_json(vocab_json, vocab_name));
    const std::vector<std::string_view> lines = split_lines(merges_txt);
    impl->merges.reserve(lines.size());
    const std::string where = merges_name + " line";
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].empty()) continue;
        if (i == 0 && lines[i].starts_with("#version")) continue;
        impl->add_merge(lines[i], where, i + 1);
    }
    impl->finish_load(t0);
    return ClipTokenizer(std::move(impl));
}

ClipTokenizer ClipTokenizer::from_strings(std::string_view vocab_json, std::string_view merges_txt,
                                          const std::string& source) {
    return load_texts(vocab_json, source + " (vocab.json)", merges_txt, source + " (merges.txt)");
}

ClipTokenizer ClipTokenizer::from_files(const std::string& vocab_json_path,
                                        const std::string& merges_txt_path) {
    const std::string vocab = read_tokenizer_file(vocab_json_path, "vocab.json");
    const std::string merges = read_tokenizer_file(merges_txt_path, "merges.txt");
    return load_texts(vocab, vocab_json_path, merges, merges_txt_path);
}

ClipTokenizer ClipTokenizer::from_dir(const std::string& dir) {
    return from_files((fs::path(dir) / "vocab.json").string(),
                      (fs::path(dir) / "merges.txt").string());
}

bool ClipTokenizer::gguf_has_vocab(const std::map<std::string, MetadataValue>& metadata) {
    if (metadata.count(kKeyTokens) == 0) return false;
    // Another tokenizer's vocabulary (a T5's "t5", an LLM's "gpt2") is not a CLIP one.
    const MetadataValue* model = find_key(metadata, kKeyModel);
    const auto* name = model ? std::get_if<std::string>(&model->value) : nullptr;
    return !model || (name && *name == kModelName);
}

ClipTokenizer ClipTokenizer::from_gguf_metadata(const std::map<std::string, MetadataValue>& md,
                                                const std::string& source) {
    const auto t0 = std::chrono::steady_clock::now();
    if (const MetadataValue* model = find_key(md, kKeyModel)) {
        const auto* name = std::get_if<std::string>(&model->value);
        if (!name || *name != kModelName) {
            fail("%s: metadata %s is %s; a CLIP vocabulary says \"%s\"", source.c_str(), kKeyModel,
                 model->to_string().c_str(), kModelName);
        }
    }
    const MetadataArray& tokens = string_array(find_key(md, kKeyTokens), kKeyTokens, source);
    const MetadataArray& merges = string_array(find_key(md, kKeyMerges), kKeyMerges, source);
    std::vector<std::pair<std::string, int64_t>> entries;
    entries.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i)
        entries.emplace_back(std::get<std::string>(tokens[i].value), static_cast<int64_t>(i));
    auto impl = Impl::create(source, vocabulary_from_entries(std::move(entries), source));
    impl->merges.reserve(merges.size());
    const std::string where = source + ": " + kKeyMerges + " entry";
    for (size_t i = 0; i < merges.size(); ++i)
        impl->add_merge(std::get<std::string>(merges[i].value), where, i);
    check_special_id(md, kKeyBos, impl->bos, source);
    check_special_id(md, kKeyEos, impl->eos, source);
    impl->finish_load(t0);
    return ClipTokenizer(std::move(impl));
}

std::map<std::string, MetadataValue> ClipTokenizer::to_gguf_metadata() const {
    MetadataArray tokens, merges;
    tokens.reserve(impl_->vocab.tokens.size());
    for (const std::string& t : impl_->vocab.tokens) tokens.push_back(MetadataValue{t});
    merges.reserve(impl_->merges.size());
    for (size_t rank = 0; rank < impl_->merges.size(); ++rank) {
        const auto& [a, b] = impl_->merges.pair(rank);
        merges.push_back(MetadataValue{impl_->vocab.tokens[a] + " " + impl_->vocab.tokens[b]});
    }
    std::map<std::string, MetadataValue> md;
    md[kKeyModel] = MetadataValue{std::string(kModelName)};
    md[kKeyTokens] = MetadataValue{std::move(tokens)};
    md[kKeyMerges] = MetadataValue{std::move(merges)};
    md[kKeyBos] = MetadataValue{static_cast<uint64_t>(impl_->bos)};
    md[kKeyEos] = MetadataValue{static_cast<uint64_t>(impl_->eos)};
    return md;
}

void ClipTokenizer::set_pre_tokenizer(PreTokenizer mode) {
    impl_->mode = mode;
}

ClipTokenizer::PreTokenizer ClipTokenizer::pre_tokenizer() const {
    return impl_->mode;
}

std::vector<int32_t> ClipTokenizer::encode(std::string_view text) const {
    return impl_->encode(text);
}

std::vector<int32_t> ClipTokenizer::tokenize_padded(std::string_view text, size_t max_length,
                                                    int32_t pad_id) const {
    return pad_windows(encode(text), max_length, pad_id);
}

std::vector<int32_t> ClipTokenizer::pad_windows(const std::vector<int32_t>& ids, size_t max_length,
                                                int32_t pad_id, std::vector<float>* weights) const {
    if (max_length < 3) {
        fail("CLIP tokenizer: a window of %zu ids cannot hold BOS, a token and EOS", max_length);
    }
    if (weights && weights->size() != ids.size()) {
        fail("CLIP tokenizer: %zu weights for %zu ids", weights->size(), ids.size());
    }
    const size_t chunk = max_length - 2;
    const size_t windows = std::max<size_t>(1, (ids.size() + chunk - 1) / chunk);
    std::vector<int32_t> out;
    std::vector<float> out_weights;
    out.reserve(windows * max_length);
    for (size_t w = 0; w < windows; ++w) {
        const size_t begin = w * chunk, end = std::min(ids.size(), begin + chunk);
        out.push_back(impl_->bos);
        out.insert(out.end(), ids.begin() + begin, ids.begin() + end);
        out.push_back(impl_->eos);
        out.resize((w + 1) * max_length, pad_id);
        if (!weights) continue;
        out_weights.push_back(1.0f);
        out_weights.insert(out_weights.end(), weights->begin() + begin, weights->begin() + end);
        out_weights.resize((w + 1) * max_length, 1.0f);
    }
    if (weights) *weights = std::move(out_weights);
    return out;
}

size_t ClipTokenizer::break_padding(size_t count, size_t chunk) {
    if (chunk == 0) return 0;
    return (chunk - count % chunk) % chunk;
}

std::string ClipTokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string bytes;
    for (int32_t id : ids) {
        if (id == impl_->bos || id == impl_->eos) continue;
        std::string_view token = token_of(id);
        const bool word_end = token.ends_with(kEndOfWord);
        if (word_end) token.remove_suffix(kEndOfWord.size());
        for (char32_t cp : unicode::decode_utf8(token)) {
            auto it = impl_->byte_of_code_point.find(cp);
            if (it != impl_->byte_of_code_point.end()) {
                bytes.push_back(static_cast<char>(it->second));
            } else {
                unicode::append_utf8(bytes, cp);
            }
        }
        if (word_end) bytes.push_back(' ');
    }
    // Like stable-diffusion.cpp: " ," becomes ",", trailing spaces go.
    const std::string valid = unicode::sanitize_utf8(bytes);
    std::string text;
    text.reserve(valid.size());
    for (size_t i = 0; i < valid.size(); ++i) {
        if (valid[i] == ' ' && i + 1 < valid.size() && valid[i + 1] == ',') continue;
        text.push_back(valid[i]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text;
}

int32_t ClipTokenizer::id_of(std::string_view token) const {
    return impl_->find(token);
}

const std::string& ClipTokenizer::token_of(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= impl_->vocab.tokens.size()) {
        fail("CLIP tokenizer: id %d is outside the vocabulary (0..%zu)", id,
             impl_->vocab.tokens.size() - 1);
    }
    return impl_->vocab.tokens[static_cast<size_t>(id)];
}

int32_t ClipTokenizer::bos_id() const {
    return impl_->bos;
}

int32_t ClipTokenizer::eos_id() const {
    return impl_->eos;
}

size_t ClipTokenizer::vocab_size() const {
    return impl_->vocab.tokens.size();
}

size_t ClipTokenizer::merge_count() const {
    return impl_->merges.size();
}

// --- finding the vocabulary ---

namespace {

enum class DirState { Found, Missing };

// Whether `dir` holds both files; a folder with just one of them is an error.
DirState probe_dir(const fs::path& dir, std::string& why) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        why = "no such folder";
        return DirState::Missing;
    }
    const bool vocab = fs::is_regular_file(dir / "vocab.json", ec);
    const bool merges = fs::is_regular_file(dir / "merges.txt", ec);
    if (vocab && merges) return DirState::Found;
    if (vocab || merges) {
        fail("%s holds %s but not %s; the CLIP tokenizer needs both", dir.string().c_str(),
             vocab ? "vocab.json" : "merges.txt", vocab ? "merges.txt" : "vocab.json");
    }
    why = "no vocab.json / merges.txt there";
    return DirState::Missing;
}

fs::path beside_model(const std::string& model_path) {
    std::error_code ec;
    const fs::path p(model_path);
    if (fs::is_directory(p, ec)) return p / "tokenizer";
    return p.parent_path() / "tokenizer";
}

}  // namespace

ClipTokenizer find_clip_tokenizer(const ClipTokenizerSearch& search) {
    std::vector<std::string> searched;
    auto try_dir = [&](const fs::path& dir, const std::string& label) -> bool {
        std::string why;
        if (probe_dir(dir, why) == DirState::Found) return true;
        searched.push_back(label + ": " + dir.string() + "/: " + why);
        return false;
    };
    auto found = [](const fs::path& dir, const std::string& label) {
        SD_LOG_INFO("CLIP tokenizer: %s (%s)", dir.string().c_str(), label.c_str());
        return ClipTokenizer::from_dir(dir.string());
    };

    if (search.tokenizer_dir.empty()) {
        searched.push_back("--tokenizer-dir: not given");
    } else {
        const fs::path dir = fs::path(search.tokenizer_dir) / "clip";
        if (try_dir(dir, "--tokenizer-dir")) return found(dir, "--tokenizer-dir");
    }
    const char* env = search.use_env ? std::getenv("SD_TOKENIZER_DIR") : nullptr;
    if (!search.use_env) {
        searched.push_back("SD_TOKENIZER_DIR: not consulted");
    } else if (!env || !*env) {
        searched.push_back("SD_TOKENIZER_DIR: not set");
    } else {
        const fs::path dir = fs::path(env) / "clip";
        if (try_dir(dir, "SD_TOKENIZER_DIR")) return found(dir, "SD_TOKENIZER_DIR");
    }
    if (search.model_path.empty()) {
        searched.push_back("tokenizer/ beside the model: no model path given");
    } else {
        const fs::path dir = beside_model(search.model_path);
        if (try_dir(dir, "beside the model")) return found(dir, "beside the model");
    }
    if (!search.model_file) {
        searched.push_back("GGUF metadata: no model file given");
    } else if (!ClipTokenizer::gguf_has_vocab(search.model_file->metadata)) {
        const MetadataValue* model = find_key(search.model_file->metadata, kKeyModel);
        searched.push_back("GGUF metadata of " + search.model_file->path + ": " +
                           (model && search.model_file->metadata.count(kKeyTokens)
                                ? "a " + model->to_string() + " vocabulary, not a CLIP one"
                                : std::string("no ") + kKeyTokens));
    } else {
        SD_LOG_INFO("CLIP tokenizer: GGUF metadata of %s", search.model_file->path.c_str());
        return ClipTokenizer::from_gguf_metadata(search.model_file->metadata,
                                                 search.model_file->path);
    }

    if (search.use_builtin) {
        const BuiltinVocabulary v = builtin_clip_vocabulary();
        SD_LOG_INFO("CLIP tokenizer: the %s", v.description);
        return ClipTokenizer::from_strings(v.vocab_json, v.merges_txt, v.description);
    }
    const std::string places = numbered_places(searched);
    fail(
        "no CLIP tokenizer vocabulary found. It needs vocab.json and merges.txt, the Hugging "
        "Face openai/clip-vit-large-patch14 tokenizer files (checkpoints do not contain "
        "them). Searched, in order:%s\nPut both files in DIR/clip/ and pass --tokenizer-dir "
        "DIR or set SD_TOKENIZER_DIR=DIR, or place them in a tokenizer/ folder beside the "
        "model.",
        places.c_str());
}

}  // namespace sd
