#include "tokenizer/unicode_text.h"

#include <algorithm>

#include "tokenizer/unicode_tables.h"

namespace sd::unicode {
namespace {

using tables::CodePair;
using tables::CodeRange;

bool in_ranges(const CodeRange* ranges, size_t count, char32_t cp) {
    const CodeRange* end = ranges + count;
    const CodeRange* it = std::upper_bound(
        ranges, end, cp, [](char32_t c, const CodeRange& r) { return c < r.first; });
    return it != ranges && cp <= (it - 1)->last;
}

bool is_continuation(unsigned char b) {
    return (b & 0xC0) == 0x80;
}

// Length of the sequence a lead byte announces, with the range its second byte must be in
// (the tighter ranges exclude overlong forms, surrogates and values above U+10FFFF);
// 0 for a byte that cannot start a sequence.
int sequence_length(unsigned char lead, unsigned char& lo, unsigned char& hi) {
    lo = 0x80;
    hi = 0xBF;
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) {
        if (lead == 0xE0) lo = 0xA0;
        if (lead == 0xED) hi = 0x9F;
        return 3;
    }
    if (lead >= 0xF0 && lead <= 0xF4) {
        if (lead == 0xF0) lo = 0x90;
        if (lead == 0xF4) hi = 0x8F;
        return 4;
    }
    return 0;
}

// Decodes one code point at text[i], advancing i past it; returns U+FFFD for a maximal
// invalid subsequence and sets `bad`.
char32_t next_code_point(std::string_view text, size_t& i, bool& bad) {
    const auto lead = static_cast<unsigned char>(text[i]);
    unsigned char lo, hi;
    const int len = sequence_length(lead, lo, hi);
    bad = false;
    if (len == 1) {
        ++i;
        return lead;
    }
    if (len == 0) {
        ++i;
        bad = true;
        return kReplacement;
    }
    char32_t cp = lead & (0x7F >> len);
    size_t j = i + 1;
    for (int k = 1; k < len; ++k, ++j) {
        if (j >= text.size()) break;
        const auto b = static_cast<unsigned char>(text[j]);
        const bool ok = k == 1 ? (b >= lo && b <= hi) : is_continuation(b);
        if (!ok) break;
        cp = (cp << 6) | (b & 0x3F);
        if (k == len - 1) {
            i = j + 1;
            return cp;
        }
    }
    i = j;  // the lead byte and the valid continuation bytes seen so far
    bad = true;
    return kReplacement;
}

}  // namespace

std::u32string decode_utf8(std::string_view text, size_t* invalid) {
    std::u32string out;
    out.reserve(text.size());
    size_t bad_count = 0;
    for (size_t i = 0; i < text.size();) {
        bool bad;
        out.push_back(next_code_point(text, i, bad));
        bad_count += bad;
    }
    if (invalid) *invalid = bad_count;
    return out;
}

void append_utf8(std::string& out, char32_t cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacement;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string encode_utf8(std::u32string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t cp : text) append_utf8(out, cp);
    return out;
}

bool is_valid_utf8(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
            ++i;
            continue;
        }
        bool bad;
        next_code_point(text, i, bad);
        if (bad) return false;
    }
    return true;
}

std::string sanitize_utf8(std::string_view text) {
    if (is_valid_utf8(text)) return std::string(text);
    return encode_utf8(decode_utf8(text));
}

bool is_letter(char32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return in_ranges(tables::letters, tables::letters_count, cp);
}

bool is_number(char32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return in_ranges(tables::numbers, tables::numbers_count, cp);
}

bool is_whitespace(char32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    return in_ranges(tables::whitespace, tables::whitespace_count, cp);
}

char32_t to_lower(char32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    const CodePair* end = tables::lower + tables::lower_count;
    const CodePair* it = std::lower_bound(tables::lower, end, cp,
                                          [](const CodePair& p, char32_t c) { return p.from < c; });
    return (it != end && it->from == cp) ? it->to : cp;
}

std::u32string to_lower(std::u32string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (char32_t cp : text) {
        if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE
            out.push_back(U'i');
            out.push_back(0x307);
        } else {
            out.push_back(to_lower(cp));
        }
    }
    return out;
}

const char* tables_version() {
    return tables::unicode_version;
}

}  // namespace sd::unicode
