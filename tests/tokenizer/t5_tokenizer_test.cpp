#include "tokenizer/t5_tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "io/io_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/tokenizer_search_fixture.h"

namespace sd {
namespace {

namespace fs = std::filesystem;
using test::error_of;

std::string t5_dir() {
    return test::fixtures_dir() + "/tokenizers/t5";
}

const T5Tokenizer& from_spiece() {
    static const T5Tokenizer t = T5Tokenizer::from_file(t5_dir() + "/spiece.model");
    return t;
}

const T5Tokenizer& from_json() {
    static const T5Tokenizer t = T5Tokenizer::from_file(t5_dir() + "/tokenizer.json");
    return t;
}

std::vector<std::string> pieces_of(const T5Tokenizer& t, const std::vector<int32_t>& ids) {
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(t.piece(id));
    return out;
}

TEST(T5Tokenizer, ReadmeExampleFromBothFormats) {
    const std::string text = "a lovely cat holding a sign";
    const std::vector<int32_t> ids = from_spiece().encode(text);
    EXPECT_EQ(ids, from_json().encode(text));
    const std::vector<std::string> want = {
        "\xE2\x96\x81"
        "a",
        "\xE2\x96\x81",
        "lov",
        "e",
        "ly",
        "\xE2\x96\x81"
        "cat",
        "\xE2\x96\x81"
        "hold",
        "ing",
        "\xE2\x96\x81"
        "a",
        "\xE2\x96\x81"
        "sign",
        "</s>"};
    EXPECT_EQ(pieces_of(from_spiece(), ids), want);
    EXPECT_EQ(pieces_of(from_json(), ids), want);
    EXPECT_EQ(ids, (std::vector<int32_t>{38, 9, 7994, 32, 309, 11426, 4464, 107, 38, 2673, 1}));
}

TEST(T5Tokenizer, SpecialIdsAndSizes) {
    for (const T5Tokenizer* t : {&from_spiece(), &from_json()}) {
        EXPECT_EQ(t->pad_id(), 0);
        EXPECT_EQ(t->eos_id(), 1);
        EXPECT_EQ(t->unk_id(), 2);
        EXPECT_EQ(t->id_of("\xE2\x96\x81"
                           "cat"),
                  11426);
        EXPECT_EQ(t->id_of("no such piece"), -1);
    }
    EXPECT_EQ(from_spiece().vocab_size(), 16000u);
    EXPECT_EQ(from_json().vocab_size(), 16100u);  // + <extra_id_99> ... <extra_id_0>
    EXPECT_EQ(from_json().piece(16000), "<extra_id_99>");
    EXPECT_NE(error_of([] { from_json().piece(16100); }).find("outside the vocabulary"),
              std::string::npos);
}

// Expected ids made by tests/tokenizer/make_t5_expected.py with Google's SentencePiece
// (python3-sentencepiece) on the fixture's spiece.model, its own normaliser switched off and
// the text normalised as stable-diffusion.cpp does (see the script):
//   /usr/bin/python3 tests/tokenizer/make_t5_expected.py
//   ../shared/fixtures/tokenizers/t5/spiece.model
struct Case {
    std::string text;
    std::vector<int32_t> ids;
};
const std::vector<Case> kCases = {
    {"a lovely cat holding a sign", {38, 9, 7994, 32, 309, 11426, 4464, 107, 38, 2673, 1}},
    {"", {9, 1}},
    {" ", {9, 1}},
    {"Hello, World!", {9, 6896, 5, 8602, 388, 1}},
    {"  leading and trailing  ", {9, 4283, 27, 3001, 1}},
    {"multiple     spaces   here", {1304, 5306, 1278, 1}},
    {"trailing space ", {3001, 2784, 1}},
    {"digits 1234567890 and 3.14159", {9160, 9, 15948, 64, 27, 5297, 51, 3412, 1}},
    {"punctuation: (a), [b]; {c}? d!... e-f_g/h",
     {14303, 1046, 16,  17, 23, 15, 5,    149, 35, 9095, 90,  22, 99, 320,
      9,     31,   388, 4,  4,  4,  1289, 14,  36, 24,   140, 3,  73, 1}},
    {"UPPER lower MiXeD", {1192, 8300, 178, 5962, 4608, 351, 32, 221, 1}},
    {"caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9",
     {9, 7111, 3204, 1307, 23, 2, 1334, 1772, 3204, 3532, 3204, 1}},
    {"\xE6\xBC\xA2\xE5\xAD\x97 and emoji \xF0\x9F\x90\xB1\xF0\x9F\x90\xB6",
     {9, 2, 27, 9, 13350, 9, 2, 1}},
    {"x\xE2\x98\x83\xE2\x98\x83y", {1084, 2, 146, 1}},
    {"tab\x09here\x0Anewline", {9188, 2, 2929, 32, 2, 1288, 1065, 1}},
    {"\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3 fullwidth", {9, 2, 983, 7826, 1}},
    {"</s> <pad> <unk>", {49, 3, 30, 45, 49, 9814, 45, 49, 6097, 45, 1}},
    {"a photo of an astronaut riding a horse on mars, 8k, highly detailed",
     {38, 9,     2210, 8355, 20,   110, 76, 693,  395, 23, 1235, 13708, 107,  38,
      9,  11386, 91,   9,    2326, 30,  5,  1830, 235, 5,  4195, 309,   4657, 1}},
    {"don't can't won't it's", {993, 75, 93, 106, 75, 93, 5616, 75, 93, 81, 75, 30, 1}},
    {"email@example.com https://example.org/path?q=1",
     {3599, 63, 2131, 4, 7, 253, 8, 2131, 4, 92, 3, 605, 320, 201, 5018, 1}},
    {"\xE2\x96\x81"
     "already\xE2\x96\x81marked",
     {9, 1287, 2055, 1}},
    {"a red bicycle leaning on a wall, evening light",
     {38, 746, 31, 878,   1596, 146, 22,  724, 2254, 6849, 107,
      91, 38,  9,  10534, 5,    489, 107, 9,   7359, 1}},
};

TEST(T5Tokenizer, MatchesSentencePieceOnVariedText) {
    for (const Case& c : kCases) {
        EXPECT_EQ(from_spiece().encode(c.text), c.ids) << "text: '" << c.text << "'";
        EXPECT_EQ(from_json().encode(c.text), c.ids) << "text: '" << c.text << "'";
        std::vector<int32_t> pieces = c.ids;
        pieces.pop_back();
        EXPECT_EQ(from_spiece().encode_pieces(c.text), pieces) << "text: '" << c.text << "'";
    }
}

TEST(T5Tokenizer, ConsecutiveUnknownsAreOnePiece) {
    // Three characters outside the vocabulary in a row give one <unk>, as SentencePiece does.
    const std::vector<int32_t> ids = from_spiece().encode("\xE2\x98\x83\xE2\x98\x83\xE2\x98\x83");
    EXPECT_EQ(ids, (std::vector<int32_t>{9, 2, 1}));
}

TEST(T5Tokenizer, InvalidUtf8IsReplaced) {
    // One U+FFFD per maximal invalid subsequence (here: two lone bytes, then a cut-off one).
    EXPECT_EQ(from_spiece().encode("cat\xFF\xFE dog \xE2\x96"),
              from_spiece().encode("cat\xEF\xBF\xBD\xEF\xBF\xBD dog \xEF\xBF\xBD"));
}

TEST(T5Tokenizer, PadWindowsAsTheReferenceProgram) {
    const T5Tokenizer& t = from_spiece();
    std::vector<int32_t> ids = t.encode("a lovely cat");
    std::vector<float> weights(ids.size(), 2.0f);
    const std::vector<int32_t> padded = t.pad_windows(ids, 8, &weights);
    std::vector<int32_t> want = ids;
    want.resize(8, 0);
    EXPECT_EQ(padded, want);
    ASSERT_EQ(weights.size(), 8u);
    for (size_t i = 0; i < 8; ++i) EXPECT_EQ(weights[i], i + 1 < ids.size() ? 2.0f : 1.0f);

    // 9 ids + </s> in windows of 4: 3 + </s>, 3 + </s>, 3 + </s>: exactly three windows.
    std::vector<int32_t> body = {5, 6, 7, 8, 9, 10, 11, 12, 13, 1};
    EXPECT_EQ(t.pad_windows(body, 4),
              (std::vector<int32_t>{5, 6, 7, 1, 8, 9, 10, 1, 11, 12, 13, 1}));
    body.insert(body.begin(), 4);  // one more spills into a fourth window
    EXPECT_EQ(t.pad_windows(body, 4),
              (std::vector<int32_t>{4, 5, 6, 1, 7, 8, 9, 1, 10, 11, 12, 1, 13, 1, 0, 0}));
    EXPECT_EQ(t.pad_windows({}, 3), (std::vector<int32_t>{1, 0, 0}));
    EXPECT_NE(error_of([&] { t.pad_windows(ids, 1); }).find("window"), std::string::npos);
}

TEST(T5Tokenizer, PadWindowsMaskAsTheReferenceProgram) {
    // The reference's attention mask: 1 for each window's ids and its </s>, 0 for the <pad>s.
    const T5Tokenizer& t = from_spiece();
    std::vector<float> mask = {7.0f};  // replaced, not appended to
    const std::vector<int32_t> body = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 1};
    EXPECT_EQ(t.pad_windows(body, 4, nullptr, &mask),
              (std::vector<int32_t>{4, 5, 6, 1, 7, 8, 9, 1, 10, 11, 12, 1, 13, 1, 0, 0}));
    EXPECT_EQ(mask, (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
    t.pad_windows({}, 3, nullptr, &mask);  // an empty prompt: </s> alone
    EXPECT_EQ(mask, (std::vector<float>{1, 0, 0}));
    t.pad_windows({5, 6, 1}, 6, nullptr, &mask);
    EXPECT_EQ(mask, (std::vector<float>{1, 1, 1, 0, 0, 0}));
}

std::string one_line_error(const std::function<void()>& fn) {
    const std::string msg = error_of(fn);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
}

TEST(T5Tokenizer, TruncatedOrGarbageSpieceModel) {
    const std::string bytes = read_tokenizer_file(t5_dir() + "/spiece.model", "spiece.model");
    for (size_t cut : {size_t{1}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
        const std::string msg =
            one_line_error([&] { T5Tokenizer::from_bytes(bytes.substr(0, cut), "cut.model"); });
        EXPECT_NE(msg.find("cut.model: not a complete SentencePiece model"), std::string::npos)
            << msg;
    }
    const std::string garbage = "\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01junk";
    EXPECT_NE(one_line_error([&] {
                  T5Tokenizer::from_bytes(garbage, "junk.model");
              }).find("junk.model: not a SentencePiece model"),
              std::string::npos);
    EXPECT_NE(one_line_error([&] { T5Tokenizer::from_bytes("", "empty.model"); }).find("no pieces"),
              std::string::npos);
    // A group wire type (3) in the top-level message.
    EXPECT_NE(one_line_error([&] {
                  T5Tokenizer::from_bytes("\x0B", "group.model");
              }).find("group.model: not a SentencePiece model"),
              std::string::npos);
}

nlohmann::json fixture_json() {
    return nlohmann::json::parse(read_tokenizer_file(t5_dir() + "/tokenizer.json", "json"));
}

TEST(T5Tokenizer, TokenizerJsonOfAnotherModelType) {
    nlohmann::json j = fixture_json();
    j["model"]["type"] = "BPE";
    const std::string msg =
        one_line_error([&] { T5Tokenizer::from_bytes(j.dump(), "bpe/tokenizer.json"); });
    EXPECT_NE(msg.find("bpe/tokenizer.json: a tokenizer.json of model type \"BPE\", not "
                       "\"Unigram\""),
              std::string::npos)
        << msg;
    EXPECT_NE(one_line_error([] {
                  T5Tokenizer::from_bytes("{\"model\": ", "x.json");
              }).find("x.json: not valid JSON"),
              std::string::npos);
    nlohmann::json no_unk = fixture_json();
    no_unk["model"].erase("unk_id");
    EXPECT_NE(
        one_line_error([&] { T5Tokenizer::from_bytes(no_unk.dump(), "u.json"); }).find("unk_id"),
        std::string::npos);
    nlohmann::json bad_entry = fixture_json();
    bad_entry["model"]["vocab"][5] = "just a string";
    EXPECT_NE(one_line_error([&] {
                  T5Tokenizer::from_bytes(bad_entry.dump(), "v.json");
              }).find("entry 5 is not a [piece, score] pair"),
              std::string::npos);
}

// The fixture's vocabulary as llama.cpp writes it into a T5 GGUF.
std::map<std::string, MetadataValue> gguf_metadata() {
    const nlohmann::json j = fixture_json();
    MetadataArray tokens, scores, types;
    for (const auto& item : j["model"]["vocab"]) {
        tokens.push_back({item[0].get<std::string>()});
        scores.push_back({item[1].get<double>()});
        types.push_back({int64_t{tokens.size() <= 3 ? (tokens.size() == 3 ? 2 : 3) : 1}});
    }
    std::map<std::string, MetadataValue> md;
    md["tokenizer.ggml.model"] = {std::string("t5")};
    md["tokenizer.ggml.tokens"] = {tokens};
    md["tokenizer.ggml.scores"] = {scores};
    md["tokenizer.ggml.token_type"] = {types};
    md["tokenizer.ggml.eos_token_id"] = {uint64_t{1}};
    md["tokenizer.ggml.padding_token_id"] = {uint64_t{0}};
    return md;
}

// Fields of the wrong JSON type are named as such (found by fuzz_t5_tokenizer: a numeric
// model.type escaped as the JSON library's exception; fuzz/regressions/t5_tokenizer/).
TEST(T5Tokenizer, TokenizerJsonFieldsOfTheWrongType) {
    nlohmann::json numeric_type = fixture_json();
    numeric_type["model"]["type"] = 0;
    nlohmann::json bad_added = fixture_json();
    bad_added["added_tokens"] = nlohmann::json::array({{{"special", "yes"}, {"id", "one"}}});
    for (const nlohmann::json& j : {numeric_type, bad_added}) {
        const std::string msg =
            one_line_error([&] { T5Tokenizer::from_bytes(j.dump(), "t.json"); });
        EXPECT_NE(msg.find("t.json: a tokenizer.json field of the wrong type"), std::string::npos)
            << msg;
    }
}

TEST(T5Tokenizer, FromGgufMetadata) {
    const auto md = gguf_metadata();
    ASSERT_TRUE(T5Tokenizer::gguf_has_vocab(md));
    const T5Tokenizer t = T5Tokenizer::from_gguf_metadata(md, "t5.gguf");
    for (const Case& c : kCases) EXPECT_EQ(t.encode(c.text), c.ids) << c.text;
    EXPECT_EQ(t.unk_id(), 2);
    auto clip = md;
    clip["tokenizer.ggml.model"] = {std::string("clip")};
    EXPECT_FALSE(T5Tokenizer::gguf_has_vocab(clip));
    auto short_scores = md;
    short_scores["tokenizer.ggml.scores"] = {MetadataArray{{0.0}}};
    EXPECT_NE(one_line_error([&] {
                  T5Tokenizer::from_gguf_metadata(short_scores, "s.gguf");
              }).find("tokenizer.ggml.scores has 1 entries"),
              std::string::npos);
}

// A vocabulary whose spaces stay spaces (SentencePiece's escape_whitespaces off) keeps them
// through the GGUF metadata -M convert writes (found by fuzz_replay_t5_tokenizer:
// fuzz/regressions/t5_tokenizer/escape_whitespaces_off.bin); a tokenizer.json whose Metaspace
// replacement is not U+2581 is refused by name.
TEST(T5Tokenizer, UnescapedWhitespaceSurvivesTheGgufRoundTrip) {
    auto md = gguf_metadata();
    md["tokenizer.ggml.escape_whitespaces"] = {false};
    const T5Tokenizer plain = T5Tokenizer::from_gguf_metadata(md, "plain.gguf");
    const T5Tokenizer escaped = T5Tokenizer::from_gguf_metadata(gguf_metadata(), "t5.gguf");
    const std::string text = "a lovely cat";
    EXPECT_NE(plain.encode(text), escaped.encode(text));
    for (const T5Tokenizer* t : {&plain, &escaped}) {
        const T5Tokenizer back = T5Tokenizer::from_gguf_metadata(t->to_gguf_metadata(), "back");
        EXPECT_EQ(back.encode(text), t->encode(text));
    }
    nlohmann::json j = fixture_json();
    j["pre_tokenizer"]["replacement"] = "_";  // the fixture's is a Metaspace
    const std::string msg = one_line_error([&] { T5Tokenizer::from_bytes(j.dump(), "r.json"); });
    EXPECT_NE(msg.find("r.json: the Metaspace pre-tokenizer's replacement is \"_\""),
              std::string::npos)
        << msg;
}

class T5TokenizerSearchTest : public test::TokenizerSearchFixture {
  protected:
    void put(const fs::path& dir, const char* name) {
        fs::create_directories(dir);
        fs::copy_file(fs::path(t5_dir()) / name, dir / name);
    }
};

TEST_F(T5TokenizerSearchTest, TokenizerDirThenBesideTheFileThenGguf) {
    const std::string text = "a lovely cat holding a sign";
    const std::vector<int32_t> want = from_spiece().encode(text);
    put(root_ / "tok" / "t5", "tokenizer.json");
    T5TokenizerSearch s;
    s.tokenizer_dir = (root_ / "tok").string();
    EXPECT_EQ(find_t5_tokenizer(s).vocab_size(), 16100u);

    // A CLIP-style (BPE) tokenizer.json beside the T5 file is skipped; diffusers' tokenizer_2/
    // beside its text_encoder_2/ is found.
    s.tokenizer_dir.clear();
    fs::create_directories(root_ / "flux" / "text_encoder_2");
    nlohmann::json bpe = fixture_json();
    bpe["model"]["type"] = "BPE";
    std::ofstream(root_ / "flux" / "text_encoder_2" / "tokenizer.json") << bpe.dump();
    put(root_ / "flux" / "tokenizer_2", "spiece.model");
    s.t5_path = (root_ / "flux" / "text_encoder_2" / "model.safetensors").string();
    const T5Tokenizer beside = find_t5_tokenizer(s);
    EXPECT_EQ(beside.vocab_size(), 16000u);
    EXPECT_EQ(beside.encode(text), want);

    TensorFile gguf;
    gguf.path = "t5xxl.gguf";
    gguf.metadata = gguf_metadata();
    T5TokenizerSearch g;
    g.use_env = false;
    g.model_file = &gguf;
    EXPECT_EQ(find_t5_tokenizer(g).encode(text), want);

    // --tokenizer-dir with a broken file is an error, not skipped.
    std::ofstream(root_ / "tok" / "t5" / "tokenizer.json") << "{ broken";
    s.tokenizer_dir = (root_ / "tok").string();
    EXPECT_NE(error_of([&] { find_t5_tokenizer(s); }).find("not valid JSON"), std::string::npos);
}

TEST_F(T5TokenizerSearchTest, NothingFoundNamesWhatAndWhere) {
    T5TokenizerSearch s;
    s.tokenizer_dir = (root_ / "tok").string();
    s.t5_path = (root_ / "models" / "t5xxl.safetensors").string();
    const std::string msg = error_of([&] { find_t5_tokenizer(s); });
    for (const std::string& part :
         {std::string("no T5 tokenizer vocabulary found"), std::string("spiece.model"),
          std::string("tokenizer.json"), std::string("--tokenizer-dir"),
          (root_ / "tok" / "t5").string(), (root_ / "models").string(),
          std::string("SD_TOKENIZER_DIR: not set"), std::string("beside the model: no path given"),
          std::string("GGUF metadata: no GGUF file given"),
          std::string("https://huggingface.co/google/t5-v1_1-xxl")}) {
        EXPECT_NE(msg.find(part), std::string::npos) << part << "\nmessage: " << msg;
    }
}

}  // namespace
}  // namespace sd
