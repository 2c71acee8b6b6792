// ClipTokenizer::from_strings over vocab.json and merges.txt texts taken from the input,
// then the prompt encoded with both pre-tokenizers, windowed and decoded. The input is
//   VOCAB_JSON \0 MERGES_TXT \0 PROMPT
// (a missing part is empty). Every id produced must lie inside the vocabulary.
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/clip_tokenizer.h"

namespace {

void check_ids(const sd::ClipTokenizer& tok, const std::vector<int32_t>& ids) {
    for (int32_t id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size()) {
            std::fprintf(stderr, "FUZZ FINDING: id %d outside the vocabulary of %zu\n", id,
                         tok.vocab_size());
            std::abort();
        }
    }
}

std::string_view next_part(std::string_view& rest) {
    const size_t nul = rest.find('\0');
    std::string_view part = rest.substr(0, nul);
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
    return part;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    const std::string_view vocab = next_part(rest);
    const std::string_view merges = next_part(rest);
    const std::string_view prompt = rest;
    sd::fuzz::run_one([&] {
        sd::ClipTokenizer tok = sd::ClipTokenizer::from_strings(vocab, merges, "fuzz");
        uint64_t sum = tok.merge_count();
        for (auto mode :
             {sd::ClipTokenizer::PreTokenizer::SdCpp, sd::ClipTokenizer::PreTokenizer::Unicode}) {
            tok.set_pre_tokenizer(mode);
            std::vector<int32_t> ids = tok.encode(prompt);
            check_ids(tok, ids);
            std::vector<float> weights(ids.size(), 0.5f);
            std::vector<int32_t> padded = tok.pad_windows(ids, 77, 0, &weights);
            check_ids(tok, padded);
            if (padded.size() % 77 != 0 || weights.size() != padded.size()) std::abort();
            sum += tok.decode(ids).size() + tok.id_of(prompt);
        }
        sd::fuzz::sink = sum;
    });
    return 0;
}
