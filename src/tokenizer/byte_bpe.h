// Pieces of a byte-level BPE tokenizer (GPT-2 style): the byte <-> symbol table and the merge
// loop over token ids.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sd::bpe {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68
// bytes for U+0100 onwards in byte order.
const std::array<char32_t, 256>& byte_code_points();
// The UTF-8 of byte b's symbol ("Ġ" for a space).
std::string byte_symbol(uint8_t b);
// The byte a symbol's code point stands for, or -1.
int byte_of_code_point(char32_t cp);

// The merge table: pair of token ids -> (rank, merged token id).
class Merges {
  public:
    void reserve(size_t n);
    // Adds the next-ranked merge; false when the pair is already there.
    bool add(int32_t left, int32_t right, int32_t merged);
    size_t size() const { return pairs_.size(); }
    const std::pair<int32_t, int32_t>& pair(size_t rank) const { return pairs_[rank]; }

    // BPE of one word given as its symbols' ids: the lowest-ranked adjacent pair is merged
    // first, all its occurrences left to right, until no pair has a merge (the reference's
    // bpe()). O(n log n); the result replaces `ids`.
    void apply(std::vector<int32_t>& ids) const;

  private:
    struct Entry {
        int32_t rank;
        int32_t merged;
    };
    const Entry* find(int32_t left, int32_t right) const;

    std::unordered_map<uint64_t, Entry> table_;
    std::vector<std::pair<int32_t, int32_t>> pairs_;  // by rank
};

}  // namespace sd::bpe
