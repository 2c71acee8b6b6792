// A small Mistral (tekken) vocabulary made by the tests, in the two forms users have: a
// tekken.json (mistral_common: 1000 special tokens, the 20 named ones listed, then the 256
// single bytes and a few merged tokens by rank, base64) and the Hugging Face tokenizer.json of
// the same vocabulary (GPT-2 byte symbols, the merges written out, specials as added tokens).
// Merged tokens, by rank after the bytes: "he", "ll", "hell", "hello", " w", "or", " wor",
// "ld", " world", so "hello world" is the ids 1000 + 259, 1000 + 264.
#pragma once

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/base64.h"
#include "tokenizer/byte_bpe.h"

namespace sd::test {

// The reference's 20 named specials, ids 0..19 (written out here, not taken from the product).
inline const std::vector<std::string>& tiny_mistral_named_specials() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> out;
        std::istringstream names(
            "<unk> <s> </s> [INST] [/INST] [AVAILABLE_TOOLS] [/AVAILABLE_TOOLS] [TOOL_RESULTS] "
            "[/TOOL_RESULTS] [TOOL_CALLS] [IMG] <pad> [IMG_BREAK] [IMG_END] [PREFIX] [MIDDLE] "
            "[SUFFIX] [SYSTEM_PROMPT] [/SYSTEM_PROMPT] [TOOL_CONTENT]");
        for (std::string name; names >> name;) out.push_back(name);
        return out;
    }();
    return v;
}

// The merged tokens after the 256 bytes, in rank order, with the pair each joins.
inline const std::vector<std::pair<std::string, std::string>>& tiny_mistral_merges() {
    static const std::vector<std::pair<std::string, std::string>> v = {
        {"h", "e"}, {"l", "l"},   {"he", "ll"}, {"hell", "o"}, {" ", "w"},
        {"o", "r"}, {" w", "or"}, {"l", "d"},   {" wor", "ld"}};
    return v;
}

constexpr int kTinyMistralSpecials = 1000;

inline std::string tiny_tekken_json() {
    nlohmann::json vocab = nlohmann::json::array();
    int rank = 0;
    auto add = [&](const std::string& bytes) {
        const std::vector<uint8_t> raw(bytes.begin(), bytes.end());
        vocab.push_back(
            {{"rank", rank++}, {"token_bytes", base64_encode(raw)}, {"token_str", nullptr}});
    };
    for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
    for (const auto& [l, r] : tiny_mistral_merges()) add(l + r);
    nlohmann::json specials = nlohmann::json::array();
    for (size_t i = 0; i < tiny_mistral_named_specials().size(); ++i)
        specials.push_back(
            {{"rank", i}, {"token_str", tiny_mistral_named_specials()[i]}, {"is_control", true}});
    const nlohmann::json doc = {{"config",
                                 {{"pattern", "unused here"},
                                  {"num_vocab_tokens", rank + kTinyMistralSpecials},
                                  {"default_vocab_size", rank + kTinyMistralSpecials},
                                  {"default_num_special_tokens", kTinyMistralSpecials},
                                  {"version", "v7"}}},
                                {"vocab", vocab},
                                {"special_tokens", specials},
                                {"audio", nullptr}};
    return doc.dump();
}

inline std::string tiny_mistral_symbols(const std::string& bytes) {
    std::string s;
    for (char c : bytes) s += bpe::byte_symbol(static_cast<uint8_t>(c));
    return s;
}

inline std::string tiny_mistral_tokenizer_json() {
    nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
    for (int i = 0; i < kTinyMistralSpecials; ++i) {
        const std::string name = i < static_cast<int>(tiny_mistral_named_specials().size())
                                     ? tiny_mistral_named_specials()[static_cast<size_t>(i)]
                                     : "<SPECIAL_" + std::to_string(i) + ">";
        vocab[name] = i;
        added.push_back({{"id", i}, {"content", name}, {"special", true}});
    }
    int id = kTinyMistralSpecials;
    for (int b = 0; b < 256; ++b)
        vocab[tiny_mistral_symbols(std::string(1, static_cast<char>(b)))] = id++;
    nlohmann::json merges = nlohmann::json::array();
    for (const auto& [l, r] : tiny_mistral_merges()) {
        vocab[tiny_mistral_symbols(l + r)] = id++;
        merges.push_back(tiny_mistral_symbols(l) + " " + tiny_mistral_symbols(r));
    }
    return nlohmann::json{
        {"model",
         {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", false}}},
        {"added_tokens", added}}
        .dump();
}

}  // namespace sd::test
