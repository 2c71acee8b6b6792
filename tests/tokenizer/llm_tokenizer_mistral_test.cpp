// The LLM tokenizer on Mistral's tekken vocabulary (FLUX.2-dev's Mistral-Small-3.2): a small
// vocabulary made by the test (tiny_mistral_vocabulary.h) read from tekken.json, tokenizer.json
// and GGUF metadata gives the ids worked out by hand, with the reference's special tokens and
// BOS; malformed files and other vocabularies are named; the finder looks in DIR/mistral/.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "tokenizer/llm_tokenizer.h"
#include "tokenizer/tekken_vocabulary.h"
#include "tokenizer/tiny_mistral_vocabulary.h"
#include "tokenizer/tokenizer_search_fixture.h"

namespace sd {
namespace {

using test::error_of;

constexpr int32_t kBytes = 1000;  // id of byte 0; the merged tokens follow at 1256
int32_t byte(char c) {
    return kBytes + static_cast<uint8_t>(c);
}
int32_t merged(int k) {  // the k-th merged token of tiny_mistral_merges()
    return kBytes + 256 + k;
}

const LlmTokenizer& tekken() {
    static const LlmTokenizer t =
        LlmTokenizer::from_tekken_json_bytes(test::tiny_tekken_json(), "tiny tekken.json");
    return t;
}

const LlmTokenizer& hf_json() {
    static const LlmTokenizer t = LlmTokenizer::from_json_bytes(
        test::tiny_mistral_tokenizer_json(), "tiny tokenizer.json", mistral_vocabulary());
    return t;
}

TEST(MistralTokenizer, IdsWorkedOutByHand) {
    for (const LlmTokenizer* t : {&tekken(), &hf_json()}) {
        // "hello": he (0), ll (1), he+ll (2), hell+o (3); " world": " w" (4), "or" (5),
        // " w"+"or" (6), "ld" (7), " wor"+"ld" (8).
        EXPECT_EQ(t->encode("hello world"), (std::vector<int32_t>{merged(3), merged(8)}));
        // "hell" and "o" cut apart by the space: "hell" alone, " o" unmerged.
        EXPECT_EQ(t->encode("hell o"), (std::vector<int32_t>{merged(2), byte(' '), byte('o')}));
        // The reference's pre-tokenization: digits one by one, punctuation runs whole.
        EXPECT_EQ(t->encode("he42!?"),
                  (std::vector<int32_t>{merged(0), byte('4'), byte('2'), byte('!'), byte('?')}));
        // Special tokens come out of the text first, whatever surrounds them.
        EXPECT_EQ(t->encode("[SYSTEM_PROMPT]hi[/SYSTEM_PROMPT][INST]hello[/INST]"),
                  (std::vector<int32_t>{17, byte('h'), byte('i'), 18, 3, merged(3), 4}));
        EXPECT_EQ(t->encode("<SPECIAL_999>"), (std::vector<int32_t>{999}));
        EXPECT_EQ(t->bos_id(), 1);
        EXPECT_EQ(t->eos_id(), 2);
        EXPECT_EQ(t->pad_id(), 11);
        EXPECT_EQ(&t->kind(), &mistral_vocabulary());
        EXPECT_EQ(t->vocab_size(), 1000u + 256u + 9u);
        EXPECT_EQ(t->merge_count(), 9u);
        EXPECT_EQ(t->decode(t->encode("hello world, [INST]")), "hello world, [INST]");
    }
}

TEST(MistralTokenizer, NonAsciiBytesAreByteTokens) {
    // "é" is C3 A9: two byte tokens (no merge joins them here).
    EXPECT_EQ(tekken().encode("\xC3\xA9"), (std::vector<int32_t>{byte('\xC3'), byte('\xA9')}));
    EXPECT_EQ(tekken().decode({byte('\xC3'), byte('\xA9')}), "\xC3\xA9");
}

TEST(MistralTokenizer, GgufMetadataRoundTrip) {
    const auto md = tekken().to_gguf_metadata();
    EXPECT_EQ(std::get<std::string>(md.at("tokenizer.ggml.pre").value), "tekken");
    EXPECT_EQ(std::get<uint64_t>(md.at("tokenizer.ggml.bos_token_id").value), 1u);
    EXPECT_TRUE(LlmTokenizer::gguf_has_vocab(md, mistral_vocabulary()));
    EXPECT_FALSE(LlmTokenizer::gguf_has_vocab(md, qwen2_vocabulary()));
    const LlmTokenizer back = LlmTokenizer::from_gguf_metadata(md, "x.gguf", mistral_vocabulary());
    EXPECT_EQ(back.encode("hello world [INST]"), tekken().encode("hello world [INST]"));
    EXPECT_EQ(back.bos_id(), 1);
    // A Qwen2 reader is told it is another family's vocabulary.
    const std::string error = error_of([&] { LlmTokenizer::from_gguf_metadata(md, "x.gguf"); });
    EXPECT_NE(error.find("tekken"), std::string::npos) << error;
}

// tekken.json with one part changed by `edit`.
std::string edited(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(test::tiny_tekken_json());
    edit(j);
    return j.dump();
}

TEST(MistralTokenizer, MalformedTekkenFilesAreNamed) {
    auto error = [](const std::string& json) {
        return error_of([&] { LlmTokenizer::from_tekken_json_bytes(json, "bad tekken.json"); });
    };
    const std::string not_json = error("{\"vocab\": [");
    EXPECT_NE(not_json.find("not valid JSON"), std::string::npos) << not_json;
    const std::string no_vocab = error("{\"config\": {}}");
    EXPECT_NE(no_vocab.find("no \"vocab\""), std::string::npos) << no_vocab;
    const std::string order = error(edited([](nlohmann::json& j) { j["vocab"][5]["rank"] = 9; }));
    EXPECT_NE(order.find("vocab entry 5 has rank 9"), std::string::npos) << order;
    const std::string b64 =
        error(edited([](nlohmann::json& j) { j["vocab"][3]["token_bytes"] = "%%%"; }));
    EXPECT_NE(b64.find("not base64"), std::string::npos) << b64;
    const std::string size =
        error(edited([](nlohmann::json& j) { j["config"]["default_vocab_size"] = 999; }));
    EXPECT_NE(size.find("default_vocab_size 999"), std::string::npos) << size;
    // Byte 0x41 given twice, so no token is the single byte 0x00.
    const std::string missing =
        error(edited([](nlohmann::json& j) { j["vocab"][0]["token_bytes"] = "QQ=="; }));
    EXPECT_NE(missing.find("single byte 0x00"), std::string::npos) << missing;
    const std::string special =
        error(edited([](nlohmann::json& j) { j["special_tokens"][17]["token_str"] = "[SYS]"; }));
    EXPECT_NE(special.find("[SYSTEM_PROMPT]"), std::string::npos) << special;
    EXPECT_NE(special.find("not a Mistral vocabulary"), std::string::npos) << special;
}

TEST(MistralTokenizer, AQwen2VocabularyIsNotMistrals) {
    const std::string qwen2 = test::fixtures_dir() + "/tokenizers/qwen2/tokenizer.json";
    const std::string error =
        error_of([&] { LlmTokenizer::from_file(qwen2, mistral_vocabulary()); });
    EXPECT_NE(error.find("not a Mistral vocabulary"), std::string::npos) << error;
}

class MistralTokenizerSearchTest : public test::TokenizerSearchFixture {};

TEST_F(MistralTokenizerSearchTest, TekkenJsonInTheMistralFolder) {
    std::filesystem::create_directories(root_ / "mistral");
    std::ofstream(root_ / "mistral" / "tekken.json") << test::tiny_tekken_json();
    LlmTokenizerSearch search;
    search.kind = &mistral_vocabulary();
    search.tokenizer_dir = root_.string();
    EXPECT_EQ(find_llm_tokenizer(search).encode("hello world"),
              (std::vector<int32_t>{merged(3), merged(8)}));
    // A Qwen2 search looks in qwen2/, not here.
    LlmTokenizerSearch qwen;
    qwen.tokenizer_dir = root_.string();
    qwen.use_builtin = false;
    EXPECT_NE(error_of([&] { find_llm_tokenizer(qwen); }).find("qwen2"), std::string::npos);
}

TEST_F(MistralTokenizerSearchTest, NothingFoundNamesTheMistralFiles) {
    LlmTokenizerSearch search;
    search.kind = &mistral_vocabulary();
    search.tokenizer_dir = root_.string();
    const std::string error = error_of([&] { find_llm_tokenizer(search); });
    EXPECT_NE(error.find("no Mistral tokenizer vocabulary found"), std::string::npos) << error;
    EXPECT_NE(error.find("tekken.json"), std::string::npos) << error;
    EXPECT_NE(error.find((root_ / "mistral").string()), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
