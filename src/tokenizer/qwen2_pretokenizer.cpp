#include "tokenizer/qwen2_pretokenizer.h"

#include "tokenizer/unicode_text.h"

namespace sd::qwen2 {

std::u32string decode_like_reference(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        char32_t cp = c;
        size_t extra = 0;
        if (c >= 0x80) {
            if ((c & 0xE0) == 0xC0) {
                cp = c & 0x1F, extra = 1;
            } else if ((c & 0xF0) == 0xE0) {
                cp = c & 0x0F, extra = 2;
            } else if ((c & 0xF8) == 0xF0) {
                cp = c & 0x07, extra = 3;
            } else {
                ++i;
                continue;
            }
        }
        if (i + extra >= text.size()) break;
        for (size_t j = 1; j <= extra; ++j) cp = (cp << 6) | (text[i + j] & 0x3F);
        out.push_back(cp);
        i += 1 + extra;
    }
    return out;
}

namespace {

// UTF-8 of what decode_like_reference() can give: a Unicode scalar value, or a surrogate or a value
// up to 0x1FFFFF, which the reference writes with the same bit layout.
void append_raw_utf8(std::string& out, char32_t cp) {
    if (cp < 0xD800 || (cp > 0xDFFF && cp <= 0x10FFFF)) return unicode::append_utf8(out, cp);
    const int tail = cp < 0x10000 ? 2 : 3;
    out.push_back(static_cast<char>((tail == 2 ? 0xE0 : 0xF0) | (cp >> (6 * tail))));
    for (int k = tail - 1; k >= 0; --k)
        out.push_back(static_cast<char>(0x80 | ((cp >> (6 * k)) & 0x3F)));
}

// The reference's classes: \p{N} is ASCII 0-9 only; \p{L} the Unicode letters.
bool is_digit(char32_t c) {
    return c >= U'0' && c <= U'9';
}
bool is_letter(char32_t c) {
    return c < 0x80 ? ((c | 0x20) >= U'a' && (c | 0x20) <= U'z') : unicode::is_letter(c);
}
bool is_newline(char32_t c) {
    return c == U'\r' || c == U'\n';
}
// C's isspace() in the "C" locale, which the reference calls for \s inside punctuation runs.
bool is_c_space(char32_t c) {
    return c == U' ' || (c >= 0x09 && c <= 0x0D);
}
// The reference's own whitespace list, for whitespace runs.
bool is_run_space(char32_t c) {
    switch (c) {
        case 0x09:
        case 0x0A:
        case 0x0B:
        case 0x0C:
        case 0x0D:
        case 0x20:
        case 0xA0:
        case 0x1680:
        case 0x202F:
        case 0x205F:
        case 0x3000:
            return true;
        default:
            return c >= 0x2000 && c <= 0x200A;
    }
}
bool is_punctuation(char32_t c) {
    return !is_letter(c) && !is_digit(c) && !is_c_space(c);
}

// ASCII lower case of a code point's UTF-8 (std::tolower in the "C" locale, byte by byte).
std::string ascii_lower(char32_t cp) {
    std::string s;
    append_raw_utf8(s, cp);
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return s;
}

// A contraction at cps[i] ('s 't 'm, 're 've 'll, any case), as the reference reads it: the
// piece is written in lower case; "'d" is not one (the reference compares two letters to
// "d"). Returns the number of code points taken, 0 when none.
size_t contraction(const std::u32string& cps, size_t i, std::string& piece) {
    if (cps[i] != U'\'' || i + 1 >= cps.size()) return 0;
    std::string next = ascii_lower(cps[i + 1]);
    if (next == "s" || next == "t" || next == "m") {
        piece = "'" + next;
        return 2;
    }
    if (i + 2 >= cps.size()) return 0;
    next += ascii_lower(cps[i + 2]);
    if (next == "re" || next == "ve" || next == "ll") {
        piece = "'" + next;
        return 3;
    }
    return 0;
}

// Appends cps[i] and the code points after it while `keep` holds; returns the end.
template <class Keep>
size_t take_while(const std::u32string& cps, size_t i, std::string& piece, Keep keep) {
    while (i < cps.size() && keep(cps[i])) append_raw_utf8(piece, cps[i++]);
    return i;
}

// A whitespace run; after a newline it ends with the first other space, which is read again
// as the start of the next piece (the reference does not advance past it).
size_t whitespace_run(const std::u32string& cps, size_t i, std::string& piece) {
    bool saw_newline = false;
    while (i < cps.size() && is_run_space(cps[i])) {
        append_raw_utf8(piece, cps[i]);
        if (is_newline(cps[i])) {
            saw_newline = true;
        } else if (saw_newline) {
            break;
        }
        ++i;
    }
    return i;
}

// The pieces of a stretch of text without special tokens: the reference's hand-written form
// of (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+ (README.md lists where it differs from the regex).
void split_cps(const std::u32string& cps, const std::function<void(std::string_view)>& emit) {
    size_t i = 0;
    std::string piece;
    while (i < cps.size()) {
        const char32_t c = cps[i];
        const bool has_next = i + 1 < cps.size();
        piece.clear();
        if (const size_t n = contraction(cps, i, piece)) {
            i += n;
        } else if (is_digit(c)) {
            append_raw_utf8(piece, c);
            ++i;
        } else if (is_letter(c) || (!is_newline(c) && has_next && is_letter(cps[i + 1]))) {
            append_raw_utf8(piece, c);
            i = take_while(cps, i + 1, piece, is_letter);
        } else if (c == U' ' && has_next && is_punctuation(cps[i + 1])) {
            append_raw_utf8(piece, c);
            i = take_while(cps, take_while(cps, i + 1, piece, is_punctuation), piece, is_newline);
        } else if (is_punctuation(c)) {
            i = take_while(cps, take_while(cps, i, piece, is_punctuation), piece, is_newline);
        } else if (is_run_space(c)) {
            i = whitespace_run(cps, i, piece);
        } else {
            ++i;  // unreachable with these classes; the reference skips such a code point
            continue;
        }
        emit(std::string_view(piece));
    }
}

}  // namespace

void split_pieces(std::string_view text, const std::function<void(std::string_view)>& emit) {
    split_cps(decode_like_reference(text), emit);
}

std::vector<std::string> pieces(std::string_view text) {
    std::vector<std::string> out;
    split_pieces(text, [&](std::string_view piece) { out.emplace_back(piece); });
    return out;
}

}  // namespace sd::qwen2
