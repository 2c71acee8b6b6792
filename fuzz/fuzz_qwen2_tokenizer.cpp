// LlmTokenizer (the byte-level BPE of the LLM text encoders) from the input: a
// tokenizer.json, vocab.json + merges.txt when the first byte is 'V', Mistral's tekken.json
// when it is 'T'; then the prompt encoded (special tokens in the text too), decoded, and the
// vocabulary carried through GGUF metadata and back. The input is
//   'J' TOKENIZER_JSON \0 PROMPT  or  'V' VOCAB_JSON \0 MERGES_TXT \0 PROMPT  or
//   'T' TEKKEN_JSON \0 PROMPT
// Every id produced must lie inside the vocabulary.
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/llm_tokenizer.h"

namespace {

std::string_view next_part(std::string_view& rest) {
    const size_t nul = rest.find('\0');
    std::string_view part = rest.substr(0, nul);
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
    return part;
}

sd::LlmTokenizer load(std::string_view& rest) {
    const char kind = rest.empty() ? 'J' : rest[0];
    if (!rest.empty()) rest.remove_prefix(1);
    if (kind == 'T') return sd::LlmTokenizer::from_tekken_json_bytes(next_part(rest), "fuzz");
    if (kind != 'V') return sd::LlmTokenizer::from_json_bytes(next_part(rest), "fuzz");
    const std::string_view vocab = next_part(rest);
    const std::string_view merges = next_part(rest);
    return sd::LlmTokenizer::from_vocab_merges_bytes(vocab, merges, "fuzz");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    sd::fuzz::run_one([&] {
        const sd::LlmTokenizer tok = load(rest);
        const std::string_view prompt = rest;
        const std::vector<int32_t> ids = tok.encode(prompt);
        for (int32_t id : ids) {
            if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size()) {
                std::fprintf(stderr, "FUZZ FINDING: id %d outside the vocabulary of %zu\n", id,
                             tok.vocab_size());
                std::abort();
            }
        }
        const std::string text = tok.decode(ids);
        const sd::LlmTokenizer back = sd::LlmTokenizer::from_gguf_metadata(
            tok.to_gguf_metadata(), "fuzz round trip", tok.kind());
        if (back.encode(prompt) != ids) {
            std::fprintf(stderr, "FUZZ FINDING: the GGUF round trip changes the ids\n");
            std::abort();
        }
        sd::fuzz::sink = text.size() + tok.merge_count() + static_cast<uint64_t>(tok.id_of(prompt));
    });
    return 0;
}
