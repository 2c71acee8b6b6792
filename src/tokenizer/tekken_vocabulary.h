// Mistral's tekken.json (mistral_common's Tekkenizer file): the special tokens, then byte
// strings by rank (base64 in the file). The merges are not written down: tiktoken's BPE merges
// the pair whose joined bytes have the lowest rank, and the LLM tokenizer derives merges from
// the ranks (LlmTokenizer::from_tekken_json_bytes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sd {

struct TekkenVocabulary {
    // Ids 0..n-1: the file's special tokens by rank, "<SPECIAL_i>" where it names none
    // (config.default_num_special_tokens of them, else as many as it lists).
    std::vector<std::string> specials;
    // Id n + r: the bytes of rank r; config.default_vocab_size - n of them when given (the
    // vocabulary the models use; mistral_common cuts the file's list there too).
    std::vector<std::string> tokens;
};

// Throws sd::Error naming `source` and the entry for anything malformed: not JSON, ranks out of
// order, bad base64, an empty token, a special token without text, sizes out of range.
TekkenVocabulary read_tekken_json(std::string_view json, const std::string& source);

}  // namespace sd
