// UTF-8 decoding and encoding, and the Unicode character classes tokenizers split on.
// Invalid UTF-8 is never an error here: each maximal invalid subsequence (the Unicode
// standard's "substitution of maximal subparts", as WHATWG decoders and Python's
// errors="replace" do) becomes one U+FFFD. The classes follow Python's unicodedata, so
// they agree with what the Hugging Face / OpenAI tokenizers compute.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sd::unicode {

constexpr char32_t kReplacement = 0xFFFD;

// Code points of `text`; invalid sequences become U+FFFD. `invalid`, when given, receives
// how many replacements were made.
std::u32string decode_utf8(std::string_view text, size_t* invalid = nullptr);

// UTF-8 of the code points; surrogates and values above U+10FFFF are written as U+FFFD.
std::string encode_utf8(std::u32string_view text);
void append_utf8(std::string& out, char32_t cp);

bool is_valid_utf8(std::string_view text);
// `text` with every invalid sequence replaced by U+FFFD (the text itself when valid).
std::string sanitize_utf8(std::string_view text);

bool is_letter(char32_t cp);      // general category L* (regex \p{L})
bool is_number(char32_t cp);      // general category N* (regex \p{N})
bool is_whitespace(char32_t cp);  // Python's str.isspace()

// Simple (one code point) lower-case mapping; unchanged when there is none.
char32_t to_lower(char32_t cp);
// Lower case of a string as Python's str.lower() gives it, except for the context-dependent
// final sigma (U+03A3 always becomes U+03C3): U+0130 becomes "i" + U+0307.
std::u32string to_lower(std::u32string_view text);

// The Unicode version the tables were generated from.
const char* tables_version();

}  // namespace sd::unicode
