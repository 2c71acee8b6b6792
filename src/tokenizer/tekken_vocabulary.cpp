#include "tokenizer/tekken_vocabulary.h"

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "base/error.h"
#include "base/strfmt.h"
#include "tokenizer/tokenizer_files.h"

namespace sd {

namespace {

constexpr int64_t kMaxTokens = 1 << 22;  // tekken v7 has 150,000; anything near this is not one

// The parts of tekken.json the tokenizer needs, read with a SAX parser (the file is ~15 MiB
// of small objects): config's sizes, vocab's rank + token_bytes, special_tokens' rank +
// token_str. Other keys (pattern, audio, image, ...) are passed over.
class TekkenReader : public nlohmann::json_sax<nlohmann::json> {
  public:
    struct Entry {
        int64_t rank = -1;
        std::optional<std::string> text;  // token_bytes (decoded) or token_str
    };
    std::vector<Entry> vocab, specials;
    int64_t vocab_size = -1, special_count = -1;
    bool has_vocab = false;

    explicit TekkenReader(const std::string& source) : source_(source) {}

    bool start_object(std::size_t) override {
        const Where parent = stack_.empty() ? Where::Document : stack_.back().where;
        Where w = Where::Other;
        if (parent == Where::Document) w = Where::Root;
        if (parent == Where::Root && key_ == "config") w = Where::Config;
        if (parent == Where::Vocab) w = Where::VocabEntry, vocab.emplace_back();
        if (parent == Where::Specials) w = Where::SpecialEntry, specials.emplace_back();
        stack_.push_back({w});
        return true;
    }
    bool start_array(std::size_t) override {
        const Where parent = stack_.empty() ? Where::Document : stack_.back().where;
        Where w = Where::Other;
        if (parent == Where::Root && key_ == "vocab") w = Where::Vocab, has_vocab = true;
        if (parent == Where::Root && key_ == "special_tokens") w = Where::Specials;
        stack_.push_back({w});
        return true;
    }
    bool end_object() override { return pop(); }
    bool end_array() override { return pop(); }
    bool key(string_t& k) override {
        key_ = std::move(k);
        return true;
    }
    bool string(string_t& s) override {
        const Where w = here();
        if (w == Where::VocabEntry && key_ == "token_bytes") {
            auto bytes = base64_decode(s);
            if (!bytes)
                fail("%s: vocab entry %zu has token_bytes that are not base64: '%s'",
                     source_.c_str(), vocab.size() - 1, printable_excerpt(s).c_str());
            vocab.back().text = std::string(bytes->begin(), bytes->end());
        }
        if (w == Where::SpecialEntry && key_ == "token_str") specials.back().text = std::move(s);
        return true;
    }
    bool number_integer(number_integer_t v) override { return number(v); }
    bool number_unsigned(number_unsigned_t v) override {
        return number(v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v));
    }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool boolean(bool) override { return true; }
    bool null() override { return true; }
    bool binary(binary_t&) override { return true; }
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& e) override {
        fail("%s: not valid JSON (at byte %zu): %s", source_.c_str(), position, e.what());
    }

  private:
    enum class Where { Document, Root, Config, Vocab, VocabEntry, Specials, SpecialEntry, Other };
    struct Frame {
        Where where;
    };
    Where here() const { return stack_.empty() ? Where::Document : stack_.back().where; }
    bool pop() {
        stack_.pop_back();
        return true;
    }
    bool number(int64_t v) {
        const Where w = here();
        if (w == Where::Config && key_ == "default_vocab_size") vocab_size = v;
        if (w == Where::Config && key_ == "default_num_special_tokens") special_count = v;
        if (w == Where::VocabEntry && key_ == "rank") vocab.back().rank = v;
        if (w == Where::SpecialEntry && key_ == "rank") specials.back().rank = v;
        return true;
    }

    const std::string& source_;
    std::string key_;
    std::vector<Frame> stack_;
};

}  // namespace

TekkenVocabulary read_tekken_json(std::string_view json, const std::string& source) {
    TekkenReader r(source);
    nlohmann::json::sax_parse(json.begin(), json.end(), &r);
    if (!r.has_vocab) fail("%s: not a tekken.json (no \"vocab\" array)", source.c_str());
    if (r.vocab.empty()) fail("%s: the vocabulary is empty", source.c_str());
    const int64_t listed = static_cast<int64_t>(r.specials.size());
    const int64_t n_special = r.special_count >= 0 ? r.special_count : listed;
    if (n_special < listed || n_special > kMaxTokens)
        fail("%s: config.default_num_special_tokens is %lld for %lld listed special tokens",
             source.c_str(), static_cast<long long>(n_special), static_cast<long long>(listed));
    int64_t n_inner = static_cast<int64_t>(r.vocab.size());
    if (r.vocab_size >= 0) {
        if (r.vocab_size <= n_special || r.vocab_size - n_special > n_inner)
            fail(
                "%s: config.default_vocab_size %lld does not fit %lld special and %lld other "
                "tokens",
                source.c_str(), static_cast<long long>(r.vocab_size),
                static_cast<long long>(n_special), static_cast<long long>(n_inner));
        n_inner = r.vocab_size - n_special;
    }
    if (n_inner > kMaxTokens)
        fail("%s: %lld tokens; a tekken vocabulary has at most %lld", source.c_str(),
             static_cast<long long>(n_inner), static_cast<long long>(kMaxTokens));

    TekkenVocabulary v;
    v.specials.resize(static_cast<size_t>(n_special));
    std::vector<bool> named(v.specials.size(), false);
    for (size_t i = 0; i < r.specials.size(); ++i) {
        const auto& s = r.specials[i];
        if (s.rank < 0 || s.rank >= n_special || named[static_cast<size_t>(s.rank)])
            fail("%s: special_tokens entry %zu has rank %lld (ranks 0..%lld, each once)",
                 source.c_str(), i, static_cast<long long>(s.rank),
                 static_cast<long long>(n_special - 1));
        if (!s.text || s.text->empty())
            fail("%s: special_tokens entry %zu has no token_str", source.c_str(), i);
        v.specials[static_cast<size_t>(s.rank)] = *s.text;
        named[static_cast<size_t>(s.rank)] = true;
    }
    for (size_t i = 0; i < v.specials.size(); ++i)
        if (!named[i]) v.specials[i] = strfmt("<SPECIAL_%zu>", i);

    v.tokens.reserve(static_cast<size_t>(n_inner));
    for (int64_t i = 0; i < n_inner; ++i) {
        auto& e = r.vocab[static_cast<size_t>(i)];
        if (e.rank != i)
            fail("%s: vocab entry %lld has rank %lld; the entries must be in rank order",
                 source.c_str(), static_cast<long long>(i), static_cast<long long>(e.rank));
        if (!e.text || e.text->empty())
            fail("%s: vocab entry %lld has no token_bytes", source.c_str(),
                 static_cast<long long>(i));
        v.tokens.push_back(std::move(*e.text));
    }
    return v;
}

}  // namespace sd
