// The generated Unicode data behind unicode_text.h (see scripts/gen_unicode_tables.py).
#pragma once

#include <cstddef>

namespace sd::unicode::tables {

struct CodeRange {
    char32_t first, last;  // inclusive
};
struct CodePair {
    char32_t from, to;
};

extern const char* const unicode_version;
extern const CodeRange letters[];  // general category L*
extern const size_t letters_count;
extern const CodeRange numbers[];  // general category N*
extern const size_t numbers_count;
extern const CodeRange whitespace[];  // Python's str.isspace()
extern const size_t whitespace_count;
extern const CodePair lower[];  // simple lower-case mapping, sorted by `from`
extern const size_t lower_count;

}  // namespace sd::unicode::tables
