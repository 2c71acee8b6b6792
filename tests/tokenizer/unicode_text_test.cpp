#include "tokenizer/unicode_text.h"

#include <gtest/gtest.h>

#include <string>

namespace sd::unicode {
namespace {

constexpr char32_t R = kReplacement;

TEST(UnicodeText, DecodesAndEncodesEveryLength) {
    const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
    size_t invalid = 99;
    const std::u32string cps = decode_utf8(text, &invalid);
    EXPECT_EQ(cps, (std::u32string{U'a', 0xE9, 0x20AC, 0x1F600}));
    EXPECT_EQ(invalid, 0u);
    EXPECT_EQ(encode_utf8(cps), text);
    EXPECT_TRUE(is_valid_utf8(text));
    EXPECT_EQ(sanitize_utf8(text), text);
    EXPECT_EQ(encode_utf8(std::u32string{0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF}),
              "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF");
    EXPECT_TRUE(decode_utf8("").empty());
}

// The expected sequences are what Python's bytes.decode("utf-8", "replace") gives.
TEST(UnicodeText, ReplacesEachMaximalInvalidSubsequence) {
    struct Case {
        std::string bytes;
        std::u32string want;
        size_t invalid;
    };
    const Case cases[] = {
        {"\x80", {R}, 1},
        {"\xE2\x82", {R}, 1},                   // truncated 3-byte sequence
        {"\xC0\xAF", {R, R}, 2},                // overlong: C0 never starts a sequence
        {"\xED\xA0\x80", {R, R, R}, 3},         // a surrogate
        {"\xF4\x90\x80\x80", {R, R, R, R}, 4},  // above U+10FFFF
        {"\xF0\x9F\x98", {R}, 1},
        {"a\xFF"
         "b",
         {U'a', R, U'b'},
         1},
        {"\xF0\x9F\x98\x80x\xF0", {0x1F600, U'x', R}, 1},
        {"\xE2\x82"
         "a",
         {R, U'a'},
         1},  // a cut sequence does not swallow the next character
    };
    for (const Case& c : cases) {
        size_t invalid = 0;
        EXPECT_EQ(decode_utf8(c.bytes, &invalid), c.want) << testing::PrintToString(c.bytes);
        EXPECT_EQ(invalid, c.invalid) << testing::PrintToString(c.bytes);
        EXPECT_FALSE(is_valid_utf8(c.bytes));
        EXPECT_EQ(sanitize_utf8(c.bytes), encode_utf8(c.want));
        EXPECT_TRUE(is_valid_utf8(sanitize_utf8(c.bytes)));
    }
}

TEST(UnicodeText, EncodingUnencodableValuesGivesReplacement) {
    EXPECT_EQ(encode_utf8(std::u32string{0xD800}), "\xEF\xBF\xBD");
    EXPECT_EQ(encode_utf8(std::u32string{0x110000}), "\xEF\xBF\xBD");
    EXPECT_EQ(encode_utf8(std::u32string{0xFFFFFFFF}), "\xEF\xBF\xBD");
}

TEST(UnicodeText, EveryByteStringDecodesToValidText) {
    // All 1- and 2-byte strings: decoding never fails and always re-encodes to valid UTF-8.
    for (int a = 0; a < 256; ++a) {
        for (int b = 0; b < 256; ++b) {
            const std::string s{static_cast<char>(a), static_cast<char>(b)};
            const std::string clean = sanitize_utf8(s);
            ASSERT_TRUE(is_valid_utf8(clean)) << a << " " << b;
            ASSERT_EQ(is_valid_utf8(s), clean == s) << a << " " << b;
        }
    }
}

TEST(UnicodeText, Letters) {
    for (char32_t c : {U'a', U'Z', char32_t{0xE9}, char32_t{0x6771}, char32_t{0x30CD},
                       char32_t{0x3A3}, char32_t{0x416}, char32_t{0x5D0}, char32_t{0xAC00}})
        EXPECT_TRUE(is_letter(c)) << std::hex << static_cast<uint32_t>(c);
    for (char32_t c : {U'1', U' ', U'_', U'\'', char32_t{0x301}, char32_t{0x3001},
                       char32_t{0x1F600}, char32_t{0x110000}})
        EXPECT_FALSE(is_letter(c)) << std::hex << static_cast<uint32_t>(c);
}

TEST(UnicodeText, Numbers) {
    for (char32_t c :
         {U'0', U'9', char32_t{0x663}, char32_t{0xBD}, char32_t{0x2160}, char32_t{0xFF11}})
        EXPECT_TRUE(is_number(c)) << std::hex << static_cast<uint32_t>(c);
    for (char32_t c : {U'a', U'.', char32_t{0x6771}})
        EXPECT_FALSE(is_number(c)) << std::hex << static_cast<uint32_t>(c);
}

TEST(UnicodeText, WhitespaceAsPythonIsspace) {
    for (char32_t c : {U' ', U'\t', U'\n', U'\v', U'\f', U'\r', char32_t{0x1C}, char32_t{0x85},
                       char32_t{0xA0}, char32_t{0x1680}, char32_t{0x2028}, char32_t{0x3000}})
        EXPECT_TRUE(is_whitespace(c)) << std::hex << static_cast<uint32_t>(c);
    for (char32_t c : {U'a', U'\0', char32_t{0x200B}, char32_t{0xFEFF}})
        EXPECT_FALSE(is_whitespace(c)) << std::hex << static_cast<uint32_t>(c);
}

TEST(UnicodeText, LowerCase) {
    EXPECT_EQ(to_lower(U'A'), U'a');
    EXPECT_EQ(to_lower(U'a'), U'a');
    EXPECT_EQ(to_lower(U'1'), U'1');
    EXPECT_EQ(to_lower(char32_t{0xC9}), char32_t{0xE9});    // É
    EXPECT_EQ(to_lower(char32_t{0x3A3}), char32_t{0x3C3});  // Σ
    EXPECT_EQ(to_lower(char32_t{0x416}), char32_t{0x436});  // Ж
    EXPECT_EQ(to_lower(char32_t{0x1C5}), char32_t{0x1C6});  // ǅ (title case)
    EXPECT_EQ(to_lower(char32_t{0xFF21}), char32_t{0xFF41});
    EXPECT_EQ(to_lower(char32_t{0x10400}), char32_t{0x10428});
    EXPECT_EQ(to_lower(char32_t{0x6771}), char32_t{0x6771});
    EXPECT_EQ(to_lower(std::u32string{U'A', 0x130, U'B'}),
              (std::u32string{U'a', U'i', 0x307, U'b'}));
}

TEST(UnicodeText, TablesKnowTheirVersion) {
    EXPECT_STRNE(tables_version(), "");
}

}  // namespace
}  // namespace sd::unicode
