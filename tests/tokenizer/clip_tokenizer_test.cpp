#include "tokenizer/clip_tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "io/io_test_util.h"
#include "io/tensor_writer.h"
#include "test_util.h"
#include "tokenizer/tokenizer_search_fixture.h"
#include "tokenizer/unicode_text.h"

namespace sd {
namespace {

namespace fs = std::filesystem;
using test::error_of;

constexpr int32_t kBos = ClipTokenizer::kStartOfTextId;
constexpr int32_t kEos = ClipTokenizer::kEndOfTextId;

std::string clip_dir() {
    return test::fixtures_dir() + "/tokenizers/clip";
}

const ClipTokenizer& clip() {
    static const ClipTokenizer tokenizer = ClipTokenizer::from_dir(clip_dir());
    return tokenizer;
}

std::string words(const std::string& word, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += (i ? " " : "") + word;
    return s;
}

// --- a small synthetic byte-level vocabulary, to test loading, finding and BPE itself ---

std::string byte_symbol(int b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    char32_t cp = static_cast<char32_t>(b);
    if (!printable) {
        cp = 256;
        for (int x = 0; x < b; ++x) {
            if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) ++cp;
        }
    }
    return unicode::encode_utf8(std::u32string(1, cp));
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    return out + "\"";
}

struct MiniVocab {
    std::vector<std::string> tokens;
    std::vector<std::pair<std::string, std::string>> merges;

    // The 512 byte symbols, then one token per merge result, then the two special tokens.
    explicit MiniVocab(std::vector<std::pair<std::string, std::string>> m = {})
        : merges(std::move(m)) {
        for (int b = 0; b < 256; ++b) tokens.push_back(byte_symbol(b));
        for (int b = 0; b < 256; ++b) tokens.push_back(byte_symbol(b) + "</w>");
        std::set<std::string> seen(tokens.begin(), tokens.end());
        for (const auto& [a, b] : merges) {
            if (seen.insert(a + b).second) tokens.push_back(a + b);
        }
        tokens.push_back("<|startoftext|>");
        tokens.push_back("<|endoftext|>");
    }
    std::string vocab_json() const {
        std::string s = "{";
        for (size_t i = 0; i < tokens.size(); ++i)
            s += (i ? ", " : "") + json_string(tokens[i]) + ": " + std::to_string(i);
        return s + "}";
    }
    std::string merges_txt() const {
        std::string s = "#version: 0.2\n";
        for (const auto& [a, b] : merges) s += a + " " + b + "\n";
        return s;
    }
    ClipTokenizer load() const {
        return ClipTokenizer::from_strings(vocab_json(), merges_txt(), "mini");
    }
    void write_to(const fs::path& dir) const {
        fs::create_directories(dir);
        std::ofstream(dir / "vocab.json", std::ios::binary) << vocab_json();
        std::ofstream(dir / "merges.txt", std::ios::binary) << merges_txt();
    }
    int32_t id(const std::string& token) const {
        return static_cast<int32_t>(std::find(tokens.begin(), tokens.end(), token) -
                                    tokens.begin());
    }
};

// A vocabulary with `n` merges, so a test can tell which of several it loaded.
MiniVocab vocab_with_merges(size_t n) {
    const std::vector<std::pair<std::string, std::string>> all = {
        {"c", "a"}, {"ca", "t</w>"}, {"d", "o"}, {"do", "g</w>"}, {"a", "b"}};
    return MiniVocab({all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n)});
}

// CLIP's bpe() as stable-diffusion.cpp writes it, on strings: the lowest-ranked adjacent pair,
// all its occurrences left to right, until none is ranked.
std::vector<std::string> naive_bpe(
    const std::string& word, const std::map<std::pair<std::string, std::string>, int>& ranks) {
    std::vector<std::string> w;
    for (size_t i = 0; i < word.size(); ++i)
        w.push_back(byte_symbol(static_cast<unsigned char>(word[i])) +
                    (i + 1 == word.size() ? "</w>" : ""));
    while (w.size() > 1) {
        int best = -1;
        std::pair<std::string, std::string> pair;
        for (size_t i = 0; i + 1 < w.size(); ++i) {
            auto it = ranks.find({w[i], w[i + 1]});
            if (it != ranks.end() && (best < 0 || it->second < best)) {
                best = it->second;
                pair = it->first;
            }
        }
        if (best < 0) break;
        std::vector<std::string> merged;
        for (size_t i = 0; i < w.size();) {
            if (i + 1 < w.size() && w[i] == pair.first && w[i + 1] == pair.second) {
                merged.push_back(pair.first + pair.second);
                i += 2;
            } else {
                merged.push_back(w[i++]);
            }
        }
        w = merged;
    }
    return w;
}

// Random merges over a few letters; `shuffled` puts them out of training order, so that a
// merge may use a token only a later merge produces.
MiniVocab random_merges(uint32_t seed, bool shuffled) {
    std::mt19937 gen(seed);
    std::vector<std::string> pool;
    for (const char* s : {"a", "b", "c", "a</w>", "b</w>", "c</w>"}) pool.push_back(s);
    std::vector<std::pair<std::string, std::string>> merges;
    std::set<std::pair<std::string, std::string>> seen;
    while (merges.size() < 60) {
        const std::string& a = pool[gen() % pool.size()];
        const std::string& b = pool[gen() % pool.size()];
        if (a.ends_with("</w>") || a.size() + b.size() > 12 || !seen.insert({a, b}).second)
            continue;
        merges.emplace_back(a, b);
        pool.push_back(a + b);
    }
    if (shuffled) std::shuffle(merges.begin(), merges.end(), gen);
    return MiniVocab(merges);
}

// --- the reference ids ---

TEST(ClipTokenizer, MatchesEveryExpectedLine) {
    std::ifstream in(clip_dir() + "/expected_ids.jsonl");
    ASSERT_TRUE(in) << clip_dir();
    std::string line;
    int lines = 0, matched = 0;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        const auto j = nlohmann::json::parse(line);
        const std::string text = j.at("text").get<std::string>();
        const auto want = j.at("ids").get<std::vector<int32_t>>();
        const std::vector<int32_t> got = clip().encode(text);
        EXPECT_EQ(got, want) << "text: " << text;
        ++lines;
        matched += got == want;
    }
    EXPECT_EQ(lines, 20);
    EXPECT_EQ(matched, lines);
}

TEST(ClipTokenizer, KnownIds) {
    const ClipTokenizer& t = clip();
    EXPECT_EQ(t.vocab_size(), 49408u);
    EXPECT_EQ(t.merge_count(), 48894u);
    EXPECT_EQ(t.bos_id(), 49406);
    EXPECT_EQ(t.eos_id(), 49407);
    EXPECT_EQ(t.id_of("<|startoftext|>"), 49406);
    EXPECT_EQ(t.id_of("<|endoftext|>"), 49407);
    EXPECT_EQ(t.id_of("cat</w>"), 2368);
    EXPECT_EQ(t.id_of("no such token"), -1);
    EXPECT_EQ(t.id_of(""), -1);
    EXPECT_EQ(t.token_of(2368), "cat</w>");
    EXPECT_EQ(t.encode("a photo of a cat"), (std::vector<int32_t>{320, 1125, 539, 320, 2368}));
}

TEST(ClipTokenizer, CaseWhitespaceAndSpecialTokens) {
    const ClipTokenizer& t = clip();
    const auto cat = t.encode("a photo of a cat");
    EXPECT_EQ(t.encode("  A PHOTO\tof\n\na   Cat \r\n"), cat);
    EXPECT_EQ(t.encode("a photo of a cat<|ENDOFTEXT|>").back(), kEos);
    EXPECT_EQ(t.encode("<|endoftext|><|startoftext|>"), (std::vector<int32_t>{kEos, kBos}));
    // A special token is split off before the word pattern runs, even after punctuation.
    EXPECT_EQ(t.encode(",<|endoftext|>"), (std::vector<int32_t>{267, kEos}));
    EXPECT_TRUE(t.encode("").empty());
    EXPECT_TRUE(t.encode(" \t\n ").empty());
}

TEST(ClipTokenizer, InvalidUtf8IsReplacedByU_FFFD) {
    const ClipTokenizer& t = clip();
    const auto replaced = t.encode("caf\xEF\xBF\xBD ok");
    EXPECT_EQ(t.encode("caf\xC3 ok"), replaced);  // a cut-off é
    EXPECT_EQ(t.encode("caf\xFF ok"), replaced);
    EXPECT_EQ(t.encode("caf\xED\xA0\x80 ok"),
              t.encode("caf\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD ok"));
    EXPECT_EQ(t.encode(std::string("a\0b", 3)).size(), 3u);  // NUL is a punctuation byte
}

TEST(ClipTokenizer, RandomBytesNeverFail) {
    const ClipTokenizer& t = clip();
    std::mt19937 gen(7);
    for (int i = 0; i < 2000; ++i) {
        std::string s(gen() % 64, '\0');
        for (char& c : s) c = static_cast<char>(gen() % 256);
        const auto ids = t.encode(s);
        for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < 49408);
        EXPECT_TRUE(unicode::is_valid_utf8(t.decode(ids)));
    }
}

TEST(ClipTokenizer, LongPrompts) {
    const ClipTokenizer& t = clip();
    std::mt19937 gen(3);
    const std::string alphabet = "abcdefghijklmnopqrstuvwxyz ,.()[]:0123456789\xC3\xA9";
    std::string text(100000, ' ');
    for (char& c : text) c = alphabet[gen() % alphabet.size()];
    const auto ids = t.encode(text);
    EXPECT_GT(ids.size(), 20000u);
    const auto windows = t.tokenize_padded(text);
    EXPECT_EQ(windows.size() % 77, 0u);
    EXPECT_EQ(windows.size() / 77, (ids.size() + 74) / 75);

    // One 100k-letter word: BPE stays fast and decodes back to the word.
    std::string word(100000, 'a');
    for (char& c : word) c = static_cast<char>('a' + gen() % 26);
    EXPECT_EQ(t.decode(t.encode(word)), word);
    EXPECT_EQ(t.decode(t.encode(std::string(100000, 'x'))), std::string(100000, 'x'));
}

TEST(ClipTokenizer, DecodeForDebugging) {
    const ClipTokenizer& t = clip();
    EXPECT_EQ(t.decode(t.tokenize_padded("a photo of a cat")), "a photo of a cat");
    EXPECT_EQ(t.decode(t.encode("red, green")), "red, green");
    EXPECT_EQ(t.decode(t.encode("東京の夜景")), "東京の夜景");
    EXPECT_EQ(t.decode(t.encode("a cat 🐱")), "a cat 🐱");
    EXPECT_EQ(t.decode({}), "");
    EXPECT_NE(error_of([&] { t.decode({320, 49408}); }).find("49408"), std::string::npos);
    EXPECT_NE(error_of([&] { t.decode({-1}); }).find("-1"), std::string::npos);
    EXPECT_NE(error_of([&] { t.token_of(1 << 30); }).find("outside"), std::string::npos);
}

TEST(ClipTokenizer, SafeFromSeveralThreads) {
    const ClipTokenizer& t = clip();
    const std::string text = "an astronaut riding a horse on mars, 4k, highly detailed";
    const auto want = t.encode(text);
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int k = 0; k < 4; ++k) {
        threads.emplace_back([&, k] {
            for (int i = 0; i < 200; ++i)
                ok[k] += t.encode(text + " " + std::to_string(i)).size() > want.size();
        });
    }
    for (auto& th : threads) th.join();
    for (int k = 0; k < 4; ++k) EXPECT_EQ(ok[k], 200);
}

// --- padding and chunking ---

TEST(ClipTokenizer, ShortPromptIsOneWindow) {
    const ClipTokenizer& t = clip();
    std::vector<int32_t> want = {kBos, 320, 1125, 539, 320, 2368, kEos};
    std::vector<int32_t> sd1 = want, sd2 = want;
    sd1.resize(77, kEos);
    sd2.resize(77, 0);
    EXPECT_EQ(t.tokenize_padded("a photo of a cat"), sd1);
    EXPECT_EQ(t.tokenize_padded("a photo of a cat", 77, 0), sd2);
}

TEST(ClipTokenizer, EmptyPromptIsBosEosAndPadding) {
    std::vector<int32_t> want = {kBos, kEos};
    want.resize(77, kEos);
    EXPECT_EQ(clip().tokenize_padded(""), want);
    want.resize(2);
    want.resize(77, 0);
    EXPECT_EQ(clip().tokenize_padded("   ", 77, 0), want);
}

// Window w of a padded sequence.
std::vector<int32_t> window(const std::vector<int32_t>& ids, size_t w) {
    return std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(w * 77),
                                ids.begin() + static_cast<std::ptrdiff_t>((w + 1) * 77));
}

std::vector<int32_t> full_window(size_t n, int32_t id, int32_t pad) {
    std::vector<int32_t> w = {kBos};
    w.insert(w.end(), n, id);
    w.push_back(kEos);
    w.resize(77, pad);
    return w;
}

TEST(ClipTokenizer, ExactlySeventyFiveTokensFillOneWindow) {
    const auto ids = clip().tokenize_padded(words("a", 75));
    ASSERT_EQ(ids.size(), 77u);
    EXPECT_EQ(ids, full_window(75, 320, kEos));
}

TEST(ClipTokenizer, SeventySixTokensTakeTwoWindows) {
    const auto ids = clip().tokenize_padded(words("a", 76), 77, 0);
    ASSERT_EQ(ids.size(), 154u);
    EXPECT_EQ(window(ids, 0), full_window(75, 320, 0));
    EXPECT_EQ(window(ids, 1), full_window(1, 320, 0));
}

TEST(ClipTokenizer, OneHundredFiftyTokensFillTwoWindows) {
    const auto ids = clip().tokenize_padded(words("a", 150));
    ASSERT_EQ(ids.size(), 154u);
    EXPECT_EQ(window(ids, 0), full_window(75, 320, kEos));
    EXPECT_EQ(window(ids, 1), full_window(75, 320, kEos));
}

TEST(ClipTokenizer, TwoHundredTokensTakeThreeWindows) {
    const auto ids = clip().tokenize_padded(words("a", 200));
    ASSERT_EQ(ids.size(), 231u);
    EXPECT_EQ(window(ids, 0), full_window(75, 320, kEos));
    EXPECT_EQ(window(ids, 1), full_window(75, 320, kEos));
    EXPECT_EQ(window(ids, 2), full_window(50, 320, kEos));
}

TEST(ClipTokenizer, WindowsKeepTheOrderOfTheIds) {
    std::vector<int32_t> ids(160);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(1000 + i);
    std::vector<float> weights(160);
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.5f + static_cast<float>(i);
    const auto out = clip().pad_windows(ids, 77, 0, &weights);
    ASSERT_EQ(out.size(), 231u);
    ASSERT_EQ(weights.size(), 231u);
    size_t next = 0;
    for (size_t w = 0; w < 3; ++w) {
        EXPECT_EQ(out[w * 77], kBos);
        EXPECT_EQ(weights[w * 77], 1.0f);
        for (size_t i = 1; i < 77; ++i) {
            const int32_t id = out[w * 77 + i];
            if (id >= 1000 && id < 2000) {
                EXPECT_EQ(id, static_cast<int32_t>(1000 + next));
                EXPECT_EQ(weights[w * 77 + i], 0.5f + static_cast<float>(next));
                ++next;
            } else {
                EXPECT_EQ(weights[w * 77 + i], 1.0f);
            }
        }
    }
    EXPECT_EQ(next, 160u);
    EXPECT_EQ(out[2 * 77 + 11], kEos);  // 10 ids in the last window
    EXPECT_EQ(out[2 * 77 + 12], 0);
}

TEST(ClipTokenizer, OtherWindowLengths) {
    const auto ids = clip().tokenize_padded("a a a a", 5, 0);
    EXPECT_EQ(ids, (std::vector<int32_t>{kBos, 320, 320, 320, kEos, kBos, 320, kEos, 0, 0}));
    EXPECT_EQ(clip().tokenize_padded("a a", 3),
              (std::vector<int32_t>{kBos, 320, kEos, kBos, 320, kEos}));
}

TEST(ClipTokenizer, BadWindowArguments) {
    EXPECT_NE(error_of([] { clip().tokenize_padded("a", 2); }).find("window of 2"),
              std::string::npos);
    EXPECT_NE(error_of([] { clip().tokenize_padded("a", 0); }).find("window"), std::string::npos);
    std::vector<float> weights(3);
    EXPECT_NE(error_of([&] {
                  clip().pad_windows({1, 2}, 77, 0, &weights);
              }).find("3 weights"),
              std::string::npos);
}

TEST(ClipTokenizer, BreakPadsToTheNextWindow) {
    EXPECT_EQ(ClipTokenizer::break_padding(0), 0u);
    EXPECT_EQ(ClipTokenizer::break_padding(1), 74u);
    EXPECT_EQ(ClipTokenizer::break_padding(74), 1u);
    EXPECT_EQ(ClipTokenizer::break_padding(75), 0u);  // exactly at a window end: nothing
    EXPECT_EQ(ClipTokenizer::break_padding(76), 74u);
    EXPECT_EQ(ClipTokenizer::break_padding(150), 0u);
    EXPECT_EQ(ClipTokenizer::break_padding(3, 0), 0u);
}

// --- BPE ---

TEST(ClipTokenizer, BpeEqualsTheReferenceAlgorithm) {
    for (bool shuffled : {false, true}) {
        for (uint32_t seed = 1; seed <= 5; ++seed) {
            const MiniVocab v = random_merges(seed, shuffled);
            const ClipTokenizer t = v.load();
            std::map<std::pair<std::string, std::string>, int> ranks;
            for (size_t r = 0; r < v.merges.size(); ++r)
                ranks.emplace(v.merges[r], static_cast<int>(r));
            std::mt19937 gen(seed * 100 + shuffled);
            for (int i = 0; i < 300; ++i) {
                std::string word(1 + gen() % 40, 'a');
                for (char& c : word) c = "abc"[gen() % 3];
                std::vector<int32_t> want;
                for (const std::string& s : naive_bpe(word, ranks)) want.push_back(v.id(s));
                ASSERT_EQ(t.encode(word), want)
                    << word << " seed " << seed << " shuffled " << shuffled;
            }
        }
    }
}

TEST(ClipTokenizer, UnicodePreTokenizer) {
    ClipTokenizer t = ClipTokenizer::from_dir(clip_dir());
    EXPECT_EQ(t.pre_tokenizer(), ClipTokenizer::PreTokenizer::SdCpp);
    t.set_pre_tokenizer(ClipTokenizer::PreTokenizer::Unicode);
    // Ids from OpenAI's simple_tokenizer rules (\p{L}, \p{N}, Unicode lower case and spaces).
    EXPECT_EQ(t.encode("café crème brûlée naïve résumé"),
              (std::vector<int32_t>{15304, 1075, 12138, 614, 711, 127, 119, 75, 13489, 1097, 35689,
                                    563, 29106, 7054, 4166}));
    EXPECT_EQ(t.encode("ÉCOLE Ünïcödé"),
              (std::vector<int32_t>{3459, 8166, 6522, 77, 35689, 66, 7255, 67, 4166}));
    EXPECT_EQ(t.encode("x\u00A0y\u3000z"), (std::vector<int32_t>{343, 344, 345}));
    EXPECT_EQ(t.encode("½ ٣ Ⅻ"), (std::vector<int32_t>{33613, 149, 352, 158, 227, 375}));
    EXPECT_EQ(t.encode("a photo of a cat"), clip().encode("a photo of a cat"));
    EXPECT_EQ(t.encode("<|startoftext|>x"), (std::vector<int32_t>{kBos, 343}));
    EXPECT_EQ(t.encode("caf\xC3"), t.encode("caf\xEF\xBF\xBD"));
}

// --- loading: files, malformed input ---

TEST(ClipTokenizer, LoadsFromFilesAndFolders) {
    const MiniVocab v = vocab_with_merges(2);
    const fs::path dir = test::temp_path("clip_files");
    v.write_to(dir);
    const ClipTokenizer a = ClipTokenizer::from_dir(dir.string());
    const ClipTokenizer b =
        ClipTokenizer::from_files((dir / "vocab.json").string(), (dir / "merges.txt").string());
    EXPECT_EQ(a.merge_count(), 2u);
    EXPECT_EQ(a.encode("cat"), (std::vector<int32_t>{v.id("cat</w>")}));
    EXPECT_EQ(b.encode("cat"), a.encode("cat"));
    fs::remove_all(dir);
}

TEST(ClipTokenizer, MergesWithWindowsLineEndsAndNoHeader) {
    const MiniVocab v = vocab_with_merges(2);
    const ClipTokenizer t =
        ClipTokenizer::from_strings(v.vocab_json(), "#version: 0.2\r\nc a\r\nca t</w>\r\n", "crlf");
    EXPECT_EQ(t.encode("cat"), (std::vector<int32_t>{v.id("cat</w>")}));
    const ClipTokenizer u = ClipTokenizer::from_strings(v.vocab_json(), "c a\nca t</w>", "bare");
    EXPECT_EQ(u.merge_count(), 2u);
}

std::string load_error(const std::string& vocab_json, const std::string& merges) {
    return error_of([&] { ClipTokenizer::from_strings(vocab_json, merges, "bad"); });
}

void expect_contains(const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
    EXPECT_LT(message.size(), 600u) << message;
}

TEST(ClipTokenizer, MalformedVocabJson) {
    const std::string merges = "#version: 0.2\n";
    expect_contains(load_error("", merges), "not valid JSON");
    expect_contains(load_error("{", merges), "not valid JSON");
    expect_contains(load_error("{\"a\": 1,}", merges), "not valid JSON");
    expect_contains(load_error("[1, 2]", merges), "expected a JSON object");
    expect_contains(load_error("\"text\"", merges), "expected a JSON object");
    expect_contains(load_error("7", merges), "expected a JSON object");
    expect_contains(load_error("{}", merges), "empty");
    expect_contains(load_error("{\"a\": 1.5}", merges), "token 'a' has the number 1.5");
    expect_contains(load_error("{\"a\": \"1\"}", merges), "token 'a' has a string");
    expect_contains(load_error("{\"a\": null}", merges), "null");
    expect_contains(load_error("{\"a\": true}", merges), "boolean");
    expect_contains(load_error("{\"a\": [1]}", merges), "token 'a' has an array");
    expect_contains(load_error("{\"a\": {\"b\": 1}}", merges), "token 'a' has an object");
    expect_contains(load_error("{\"a\": -1}", merges), "outside");
    expect_contains(load_error("{\"a\": 99999999999}", merges), "outside");
    expect_contains(load_error("{\"a\": 0, \"b\": 0}", merges),
                    "id 0 is given to both 'a' and 'b'");
    expect_contains(load_error("{\"a\": 0, \"a\": 1}", merges), "token 'a' appears twice");
    expect_contains(load_error("{\"a\": 0, \"b\": 5}", merges), "ids must be 0..1");
    expect_contains(load_error(std::string(100000, '[') + std::string(100000, ']'), merges),
                    "expected a JSON object");
    expect_contains(load_error("{\"a\": " + std::string(100000, '[') + "}", merges),
                    "token 'a' has an array");
    expect_contains(load_error("{\"\xFF\": 0}", merges), "not valid JSON");
    // Valid JSON, but not a byte-level vocabulary.
    expect_contains(load_error("{\"a\": 0}", merges), "lacks the byte token");
    MiniVocab v;
    v.tokens.pop_back();  // no <|endoftext|>
    expect_contains(load_error(v.vocab_json(), merges), "lacks the special token <|endoftext|>");
}

TEST(ClipTokenizer, MalformedMerges) {
    const std::string vocab = vocab_with_merges(2).vocab_json();
    expect_contains(load_error(vocab, "#version: 0.2\nc a\nca t</w>\nz q\n"),
                    "(merges.txt) line 4: merge 'z q' uses 'zq'");
    expect_contains(load_error(vocab, "#version: 0.2\nc\n"), "line 2: expected two tokens");
    expect_contains(load_error(vocab, "#version: 0.2\nc a t\n"), "line 2: expected two tokens");
    expect_contains(load_error(vocab, "#version: 0.2\n c\n"), "line 2: expected two tokens");
    expect_contains(load_error(vocab, "#version: 0.2\nc \n"), "line 2: expected two tokens");
    expect_contains(load_error(vocab, "#version: 0.2\nc a\nc a\n"),
                    "line 3: merge 'c a' appears twice");
    expect_contains(load_error(vocab, "#version: 0.2\nnope a\n"), "uses 'nope'");
    expect_contains(load_error(vocab, "#version: 0.2\nc nope\n"), "uses 'nope'");
    // A huge line: the message quotes only its start.
    const std::string msg =
        load_error(vocab, "#version: 0.2\n" + std::string(1 << 20, 'x') + " y\n");
    expect_contains(msg, "line 2");
    expect_contains(msg, "bytes)");
    expect_contains(load_error(vocab, std::string("c\x01 a\n", 5)), "\\x01");
}

TEST(ClipTokenizer, MissingAndOversizedFiles) {
    const fs::path dir = test::temp_path("clip_missing");
    fs::create_directories(dir);
    std::string msg = error_of([&] { ClipTokenizer::from_dir(dir.string()); });
    expect_contains(msg, "vocab.json: no such file");
    std::ofstream(dir / "vocab.json") << vocab_with_merges(0).vocab_json();
    msg = error_of([&] { ClipTokenizer::from_dir(dir.string()); });
    expect_contains(msg, "merges.txt: no such file");
    fs::create_directories(dir / "merges.txt");  // a folder where the file belongs
    msg = error_of([&] { ClipTokenizer::from_dir(dir.string()); });
    expect_contains(msg, "merges.txt: no such file");
    fs::remove(dir / "merges.txt");
    { std::ofstream(dir / "merges.txt") << "#version: 0.2\n"; }
    fs::resize_file(dir / "merges.txt", (64u << 20) + 1);  // sparse
    msg = error_of([&] { ClipTokenizer::from_dir(dir.string()); });
    expect_contains(msg, "limit");
    fs::remove_all(dir);
}

// --- GGUF metadata ---

TEST(ClipTokenizer, GgufMetadataRoundTrip) {
    const auto md = clip().to_gguf_metadata();
    EXPECT_EQ(std::get<std::string>(md.at("tokenizer.ggml.model").value), "clip");
    ASSERT_EQ(std::get<MetadataArray>(md.at("tokenizer.ggml.tokens").value).size(), 49408u);
    ASSERT_EQ(std::get<MetadataArray>(md.at("tokenizer.ggml.merges").value).size(), 48894u);
    EXPECT_EQ(std::get<std::string>(
                  std::get<MetadataArray>(md.at("tokenizer.ggml.merges").value)[0].value),
              "i n");
    EXPECT_TRUE(ClipTokenizer::gguf_has_vocab(md));
    const ClipTokenizer t = ClipTokenizer::from_gguf_metadata(md, "model.gguf");
    EXPECT_EQ(t.vocab_size(), 49408u);
    EXPECT_EQ(t.merge_count(), 48894u);
    const std::string text = "masterpiece, best quality, café 東京 🐱 <|endoftext|>";
    EXPECT_EQ(t.encode(text), clip().encode(text));
}

TEST(ClipTokenizer, GgufFileRoundTrip) {
    const MiniVocab v = vocab_with_merges(4);
    const std::string path = test::temp_path("clip_vocab.gguf");
    write_gguf(path, {}, v.load().to_gguf_metadata());
    const TensorFile f = read_gguf(path);
    const ClipTokenizer t = ClipTokenizer::from_gguf_metadata(f.metadata, f.path);
    EXPECT_EQ(t.merge_count(), 4u);
    EXPECT_EQ(t.encode("cat dog"), (std::vector<int32_t>{v.id("cat</w>"), v.id("dog</w>")}));
    fs::remove(path);
}

MetadataValue strings(const std::vector<std::string>& v) {
    MetadataArray a;
    for (const auto& s : v) a.push_back(MetadataValue{s});
    return MetadataValue{a};
}

TEST(ClipTokenizer, GgufMetadataBuiltByHand) {
    const MiniVocab v = vocab_with_merges(2);
    std::map<std::string, MetadataValue> md;
    md["tokenizer.ggml.tokens"] = strings(v.tokens);
    md["tokenizer.ggml.merges"] = strings({"c a", "ca t</w>"});
    md["tokenizer.ggml.bos_token_id"] = MetadataValue{int64_t{v.id("<|startoftext|>")}};
    md["tokenizer.ggml.eos_token_id"] = MetadataValue{uint64_t(v.id("<|endoftext|>"))};
    const ClipTokenizer t = ClipTokenizer::from_gguf_metadata(md, "m.gguf");
    EXPECT_EQ(t.encode("cat"), (std::vector<int32_t>{v.id("cat</w>")}));
    EXPECT_EQ(t.bos_id(), v.id("<|startoftext|>"));
    EXPECT_EQ(t.tokenize_padded("cat")[2], t.eos_id());

    auto error_with = [&](const std::string& key, std::optional<MetadataValue> value) {
        auto m = md;
        if (value) {
            m[key] = *value;
        } else {
            m.erase(key);
        }
        return error_of([&] { ClipTokenizer::from_gguf_metadata(m, "m.gguf"); });
    };
    expect_contains(error_with("tokenizer.ggml.model", MetadataValue{std::string("gpt2")}),
                    "tokenizer.ggml.model is \"gpt2\"");
    expect_contains(error_with("tokenizer.ggml.model", MetadataValue{int64_t{1}}),
                    "tokenizer.ggml.model");
    expect_contains(error_with("tokenizer.ggml.merges", std::nullopt),
                    "m.gguf: metadata has no tokenizer.ggml.merges");
    expect_contains(error_with("tokenizer.ggml.tokens", std::nullopt), "no tokenizer.ggml.tokens");
    expect_contains(error_with("tokenizer.ggml.tokens", MetadataValue{std::string("x")}),
                    "not an array of strings");
    expect_contains(error_with("tokenizer.ggml.tokens",
                               MetadataValue{MetadataArray{MetadataValue{int64_t{3}}}}),
                    "entry 0 is not a string");
    expect_contains(error_with("tokenizer.ggml.tokens", strings({})), "empty");
    expect_contains(error_with("tokenizer.ggml.tokens", strings({"a", "a"})), "'a' appears twice");
    expect_contains(error_with("tokenizer.ggml.merges", strings({"c a", "q r"})),
                    "tokenizer.ggml.merges entry 1: merge 'q r'");
    expect_contains(error_with("tokenizer.ggml.bos_token_id", MetadataValue{int64_t{5}}),
                    "bos_token_id is 5");
    expect_contains(error_with("tokenizer.ggml.eos_token_id", MetadataValue{std::string("x")}),
                    "not an integer");
    EXPECT_FALSE(ClipTokenizer::gguf_has_vocab({}));
}

// A T5's or an LLM's GGUF vocabulary is no CLIP vocabulary: with the CLIP-L and the T5-XXL both
// converted to GGUF with their vocabularies, the CLIP search passes the T5's by.
TEST(ClipTokenizerGguf, OtherTokenizersAreNotClipVocabularies) {
    std::map<std::string, MetadataValue> md;
    md["tokenizer.ggml.tokens"] = strings({"a", "b"});
    EXPECT_TRUE(ClipTokenizer::gguf_has_vocab(md));  // no model key: read as CLIP
    md["tokenizer.ggml.model"] = MetadataValue{std::string("clip")};
    EXPECT_TRUE(ClipTokenizer::gguf_has_vocab(md));
    for (const char* other : {"t5", "gpt2", "llama"}) {
        md["tokenizer.ggml.model"] = MetadataValue{std::string(other)};
        EXPECT_FALSE(ClipTokenizer::gguf_has_vocab(md)) << other;
    }
}

// --- finding the vocabulary ---

class FindClipTokenizer : public test::TokenizerSearchFixture {
  protected:
    // Places a vocabulary with `merges` merges in each location; 0 leaves it empty.
    ClipTokenizerSearch places(size_t explicit_merges, size_t env_merges, size_t beside_merges,
                               size_t gguf_merges) {
        ClipTokenizerSearch s;
        s.use_builtin = false;  // these tests look at the places searched
        s.tokenizer_dir = (root_ / "explicit").string();
        if (explicit_merges)
            vocab_with_merges(explicit_merges).write_to(root_ / "explicit" / "clip");
        if (env_merges) vocab_with_merges(env_merges).write_to(root_ / "env" / "clip");
        setenv("SD_TOKENIZER_DIR", (root_ / "env").string().c_str(), 1);
        fs::create_directories(root_ / "models");
        s.model_path = (root_ / "models" / "model.safetensors").string();
        if (beside_merges)
            vocab_with_merges(beside_merges).write_to(root_ / "models" / "tokenizer");
        file_.path = (root_ / "models" / "model.gguf").string();
        file_.metadata.clear();
        if (gguf_merges) file_.metadata = vocab_with_merges(gguf_merges).load().to_gguf_metadata();
        s.model_file = &file_;
        return s;
    }
    TensorFile file_;
};

TEST_F(FindClipTokenizer, TakesThePlacesInOrder) {
    EXPECT_EQ(find_clip_tokenizer(places(1, 2, 3, 4)).merge_count(), 1u);
    fs::remove_all(root_ / "explicit");
    EXPECT_EQ(find_clip_tokenizer(places(0, 2, 3, 4)).merge_count(), 2u);
    fs::remove_all(root_ / "env");
    EXPECT_EQ(find_clip_tokenizer(places(0, 0, 3, 4)).merge_count(), 3u);
    fs::remove_all(root_ / "models" / "tokenizer");
    EXPECT_EQ(find_clip_tokenizer(places(0, 0, 0, 4)).merge_count(), 4u);
}

TEST_F(FindClipTokenizer, EnvironmentCanBeIgnored) {
    ClipTokenizerSearch s = places(0, 2, 3, 0);
    s.use_env = false;
    EXPECT_EQ(find_clip_tokenizer(s).merge_count(), 3u);
}

TEST_F(FindClipTokenizer, DiffusersFolderHoldsTokenizer) {
    vocab_with_merges(3).write_to(root_ / "diffusers" / "tokenizer");
    ClipTokenizerSearch s;
    s.use_env = false;
    s.model_path = (root_ / "diffusers").string();
    EXPECT_EQ(find_clip_tokenizer(s).merge_count(), 3u);
}

TEST_F(FindClipTokenizer, ErrorNamesFilesAndEveryPlace) {
    const ClipTokenizerSearch s = places(0, 0, 0, 0);
    const std::string msg = error_of([&] { find_clip_tokenizer(s); });
    for (const std::string& part : std::vector<std::string>{
             "vocab.json", "merges.txt",
             "1. --tokenizer-dir: " + (root_ / "explicit" / "clip").string(),
             "2. SD_TOKENIZER_DIR: " + (root_ / "env" / "clip").string(),
             "3. beside the model: " + (root_ / "models" / "tokenizer").string(),
             "4. GGUF metadata of " + file_.path + ": no tokenizer.ggml.tokens",
             "--tokenizer-dir DIR"}) {
        EXPECT_NE(msg.find(part), std::string::npos) << part << "\nmessage: " << msg;
    }

    unsetenv("SD_TOKENIZER_DIR");
    ClipTokenizerSearch none;
    none.use_builtin = false;
    const std::string bare = error_of([&] { find_clip_tokenizer(none); });
    for (const char* part : {"--tokenizer-dir: not given", "SD_TOKENIZER_DIR: not set",
                             "no model path given", "GGUF metadata: no model file given"}) {
        EXPECT_NE(bare.find(part), std::string::npos) << part << "\nmessage: " << bare;
    }
}

TEST_F(FindClipTokenizer, BrokenFilesAreErrorsNotSkipped) {
    ClipTokenizerSearch s = places(0, 2, 3, 4);
    fs::create_directories(root_ / "explicit" / "clip");
    std::ofstream(root_ / "explicit" / "clip" / "vocab.json") << "{";
    std::ofstream(root_ / "explicit" / "clip" / "merges.txt") << "";
    expect_contains(error_of([&] { find_clip_tokenizer(s); }), "not valid JSON");
    fs::remove(root_ / "explicit" / "clip" / "merges.txt");
    expect_contains(error_of([&] { find_clip_tokenizer(s); }),
                    "holds vocab.json but not merges.txt");
}

}  // namespace
// With no vocabulary anywhere the built-in one is taken: the OpenAI CLIP vocabulary, giving the
// reference's ids.
TEST(BuiltinClipVocabulary, IsTheClipVocabulary) {
    ::unsetenv("SD_TOKENIZER_DIR");
    const ClipTokenizer builtin = find_clip_tokenizer(ClipTokenizerSearch{});
    const ClipTokenizer files =
        ClipTokenizer::from_files(test::fixtures_dir() + "/tokenizers/clip/vocab.json",
                                  test::fixtures_dir() + "/tokenizers/clip/merges.txt");
    EXPECT_EQ(builtin.vocab_size(), files.vocab_size());
    EXPECT_EQ(builtin.merge_count(), files.merge_count());
    EXPECT_EQ(builtin.encode("a photo of a cat"),
              (std::vector<int32_t>{320, 1125, 539, 320, 2368}));
    for (const char* text : {"Hello, WORLD! 42", "naïve café", "一只猫 🐱"})
        EXPECT_EQ(builtin.encode(text), files.encode(text)) << text;
}

}  // namespace sd
