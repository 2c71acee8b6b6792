// T5Tokenizer::from_bytes over the input's file part (a spiece.model protobuf or a
// tokenizer.json, told apart by content), then the prompt encoded, windowed, and the
// vocabulary carried through GGUF metadata and back. The input is
//   N PROMPT[N] FILE_BYTES
// (N: one byte, the prompt's length; a protobuf holds any bytes, so the file comes last).
// Every id produced must lie inside the vocabulary.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/t5_tokenizer.h"

namespace {

void check_ids(const sd::T5Tokenizer& tok, const std::vector<int32_t>& ids) {
    for (int32_t id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size()) {
            std::fprintf(stderr, "FUZZ FINDING: id %d outside the vocabulary of %zu\n", id,
                         tok.vocab_size());
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t n =
        input.empty() ? 0 : std::min<size_t>(static_cast<uint8_t>(input[0]), input.size() - 1);
    const std::string_view prompt = input.substr(input.empty() ? 0 : 1, n);
    const std::string_view file = input.substr(input.empty() ? 0 : 1 + n);
    sd::fuzz::run_one([&] {
        const sd::T5Tokenizer tok = sd::T5Tokenizer::from_bytes(file, "fuzz");
        std::vector<int32_t> ids = tok.encode(prompt);
        check_ids(tok, ids);
        std::vector<float> weights(ids.size(), 0.5f), mask;
        const std::vector<int32_t> padded = tok.pad_windows(ids, 16, &weights, &mask);
        check_ids(tok, padded);
        if (padded.size() % 16 != 0 || weights.size() != padded.size() ||
            mask.size() != padded.size())
            std::abort();
        uint64_t sum = 0;
        for (int32_t id : ids) sum += tok.piece(id).size();
        // The GGUF round trip -M convert makes must give the same ids.
        const sd::T5Tokenizer back =
            sd::T5Tokenizer::from_gguf_metadata(tok.to_gguf_metadata(), "fuzz round trip");
        if (back.encode(prompt) != ids) {
            std::fprintf(stderr, "FUZZ FINDING: the GGUF round trip changes the ids\n");
            std::abort();
        }
        sd::fuzz::sink = sum + static_cast<uint64_t>(tok.id_of(prompt));
    });
    return 0;
}
