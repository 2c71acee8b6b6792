#include "tokenizer/llm_tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/io_test_util.h"
#include "io/tensor_writer.h"
#include "test_util.h"
#include "tokenizer/qwen2_pretokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/tokenizer_search_fixture.h"

namespace sd {
namespace {

namespace fs = std::filesystem;
using test::error_of;

std::string qwen2_dir() {
    return test::fixtures_dir() + "/tokenizers/qwen2";
}

const LlmTokenizer& from_json() {
    static const LlmTokenizer t = LlmTokenizer::from_file(qwen2_dir() + "/tokenizer.json");
    return t;
}

const LlmTokenizer& from_vocab_merges() {
    static const LlmTokenizer t =
        LlmTokenizer::from_vocab_merges(qwen2_dir() + "/vocab.json", qwen2_dir() + "/merges.txt");
    return t;
}

struct Case {
    std::string text;
    std::vector<int32_t> ids;
};

// The reference program's ids for 437 strings (../shared/fixtures/README.md).
const std::vector<Case>& reference_cases() {
    static const std::vector<Case> cases = [] {
        std::vector<Case> out;
        std::ifstream in(qwen2_dir() + "/expected_ids.jsonl");
        for (std::string line; std::getline(in, line);) {
            if (line.empty()) continue;
            const nlohmann::json j = nlohmann::json::parse(line);
            out.push_back({j["text"].get<std::string>(), j["ids"].get<std::vector<int32_t>>()});
        }
        return out;
    }();
    return cases;
}

// How many reference cases `t` gets right; each wrong one is reported.
size_t matching_cases(const LlmTokenizer& t, const char* source) {
    size_t ok = 0;
    for (const Case& c : reference_cases()) {
        const std::vector<int32_t> ids = t.encode(c.text);
        EXPECT_EQ(ids, c.ids) << source << ", text: '" << c.text << "'";
        ok += ids == c.ids;
    }
    return ok;
}

TEST(LlmTokenizer, ReferenceIdsFromTokenizerJson) {
    ASSERT_EQ(reference_cases().size(), 437u);
    EXPECT_EQ(matching_cases(from_json(), "tokenizer.json"), 437u);
}

TEST(LlmTokenizer, ReferenceIdsFromVocabAndMerges) {
    EXPECT_EQ(matching_cases(from_vocab_merges(), "vocab.json + merges.txt"), 437u);
}

// The vocabulary as llama.cpp's converter writes a Qwen3 GGUF: 151,936 tokens, the ids past
// the special tokens filled with "[PAD<id>]" of type unused (5), specials control (3) or
// user-defined (4), written to a file with the project's GGUF writer and read back.
TEST(LlmTokenizer, ReferenceIdsFromAGgufFile) {
    std::map<std::string, MetadataValue> md = from_json().to_gguf_metadata();
    auto& tokens = std::get<MetadataArray>(md["tokenizer.ggml.tokens"].value);
    auto& types = std::get<MetadataArray>(md["tokenizer.ggml.token_type"].value);
    ASSERT_EQ(tokens.size(), 151669u);
    while (tokens.size() < 151936) {
        tokens.push_back({"[PAD" + std::to_string(tokens.size()) + "]"});
        types.push_back({int64_t{5}});
    }
    md["tokenizer.ggml.bos_token_id"] = {uint64_t{151643}};
    md["tokenizer.ggml.eos_token_id"] = {uint64_t{151645}};
    md["general.architecture"] = {std::string("qwen3")};
    const std::string path = test::temp_path("qwen3_vocab.gguf");
    write_gguf(path, {}, md);
    const TensorFile f = read_gguf(path);
    ASSERT_TRUE(LlmTokenizer::gguf_has_vocab(f.metadata));
    const LlmTokenizer t = LlmTokenizer::from_gguf_metadata(f.metadata, f.path);
    fs::remove(path);
    EXPECT_EQ(t.vocab_size(), 151936u);
    EXPECT_EQ(t.merge_count(), 151387u);
    EXPECT_EQ(t.id_of("[PAD151700]"), 151700);
    EXPECT_FALSE(t.is_special(151700));
    EXPECT_EQ(t.encode("[PAD151700]"), from_json().encode("[PAD151700]"));  // not recognised
    EXPECT_EQ(matching_cases(t, "GGUF"), 437u);
}

// A GGUF without token types (and without tokenizer.ggml.pre): Qwen2's own special tokens
// are the ones recognised.
TEST(LlmTokenizer, GgufMetadataWithoutTokenTypes) {
    auto md = from_json().to_gguf_metadata();
    EXPECT_EQ(std::get<std::string>(md.at("tokenizer.ggml.model").value), "gpt2");
    EXPECT_EQ(std::get<std::string>(md.at("tokenizer.ggml.pre").value), "qwen2");
    EXPECT_EQ(std::get<uint64_t>(md.at("tokenizer.ggml.eos_token_id").value), 151643u);
    const auto& types = std::get<MetadataArray>(md.at("tokenizer.ggml.token_type").value);
    EXPECT_EQ(std::get<int64_t>(types[151644].value), 3);  // <|im_start|>: control
    EXPECT_EQ(std::get<int64_t>(types[151667].value), 4);  // <think>: user-defined
    EXPECT_EQ(std::get<int64_t>(types[8251].value), 1);
    md.erase("tokenizer.ggml.token_type");
    md.erase("tokenizer.ggml.pre");
    ASSERT_TRUE(LlmTokenizer::gguf_has_vocab(md));
    const LlmTokenizer t = LlmTokenizer::from_gguf_metadata(md, "old.gguf");
    const std::string text = "<|im_start|>user\n<think>a cat</think><|im_end|>";
    EXPECT_EQ(t.encode(text), from_json().encode(text));
    EXPECT_TRUE(t.is_special(151668));
}

TEST(LlmTokenizer, VocabularyShapeAndSpecialTokens) {
    for (const LlmTokenizer* t : {&from_json(), &from_vocab_merges()}) {
        EXPECT_EQ(t->vocab_size(), 151669u);
        EXPECT_EQ(t->merge_count(), 151387u);
        EXPECT_EQ(t->id_of("<|endoftext|>"), 151643);
        EXPECT_EQ(t->id_of("<|im_start|>"), 151644);
        EXPECT_EQ(t->id_of("<|im_end|>"), 151645);
        EXPECT_EQ(t->id_of("<|vision_start|>"), 151652);
        EXPECT_EQ(t->id_of("<|image_pad|>"), 151655);
        EXPECT_EQ(t->id_of("<think>"), 151667);
        EXPECT_EQ(t->id_of("</think>"), 151668);
        EXPECT_EQ(t->id_of("!"), 0);
        EXPECT_EQ(t->id_of("\xC4\xA0"
                           "cat"),
                  8251);  // "Ġcat"
        EXPECT_EQ(t->id_of("no such token"), -1);
        EXPECT_EQ(t->token(151644), "<|im_start|>");
        EXPECT_TRUE(t->is_special(151667));
        EXPECT_FALSE(t->is_special(8251));
        EXPECT_EQ(t->eos_id(), 151643);
        EXPECT_EQ(t->pad_id(), 151643);
        EXPECT_NE(error_of([&] { t->token(151669); }).find("outside the vocabulary"),
                  std::string::npos);
    }
}

TEST(LlmTokenizer, SpecialTokensInsideText) {
    const LlmTokenizer& t = from_json();
    const std::vector<int32_t> cat = t.encode("a cat");
    std::vector<int32_t> want = {151644};
    want.insert(want.end(), cat.begin(), cat.end());
    want.push_back(151645);
    EXPECT_EQ(t.encode("<|im_start|>a cat<|im_end|>"), want);
    // Glued to words on both sides, back to back, and a lookalike that is not one.
    EXPECT_EQ(t.encode("x<think></think>y"),
              (std::vector<int32_t>{t.id_of("x"), 151667, 151668, t.id_of("y")}));
    const std::vector<int32_t> fake = t.encode("<|im_start |>");
    EXPECT_EQ(std::count(fake.begin(), fake.end(), 151644), 0);
    // An image placeholder run as Qwen-Image's edit template writes it.
    EXPECT_EQ(t.encode("<|vision_start|><|image_pad|><|vision_end|>"),
              (std::vector<int32_t>{151652, 151655, 151653}));
    EXPECT_TRUE(t.encode("").empty());
}

TEST(Qwen2Pretokenizer, QuirksOfTheReference) {
    using Pieces = std::vector<std::string>;
    // A whitespace run is taken whole (Hugging Face: "a", " ", " b").
    EXPECT_EQ(qwen2::pieces("a  b"), (Pieces{"a", "  ", "b"}));
    // After a newline the run ends with the first space, which is read again.
    EXPECT_EQ(qwen2::pieces("x\n y"), (Pieces{"x", "\n ", " y"}));
    EXPECT_EQ(qwen2::pieces("x\n\n  y"), (Pieces{"x", "\n\n ", "  ", "y"}));
    // Contractions are written in lower case; "'d" is not one.
    EXPECT_EQ(qwen2::pieces("IT'S"), (Pieces{"IT", "'s"}));
    EXPECT_EQ(qwen2::pieces("we'RE"), (Pieces{"we", "'re"}));
    EXPECT_EQ(qwen2::pieces("I'D"), (Pieces{"I", "'D"}));
    // Digits one by one; a non-ASCII digit is punctuation (here it leads a letter run).
    EXPECT_EQ(qwen2::pieces("2024"), (Pieces{"2", "0", "2", "4"}));
    EXPECT_EQ(qwen2::pieces("\xD9\xA3"
                            "abc"),
              (Pieces{"\xD9\xA3"
                      "abc"}));
    // Punctuation with one space in front, newlines after. U+3000 starts a punctuation run,
    // but inside a whitespace run it is whitespace.
    EXPECT_EQ(qwen2::pieces("a !?\n\nb"), (Pieces{"a", " !?\n\n", "b"}));
    EXPECT_EQ(qwen2::pieces("\xE3\x80\x80!"), (Pieces{"\xE3\x80\x80!"}));
    EXPECT_EQ(qwen2::pieces("a\t\xE3\x80\x80 b"), (Pieces{"a", "\t\xE3\x80\x80 ", "b"}));
    // The reference's UTF-8 reading: C3 41 is U+00C1, a stray byte is skipped.
    EXPECT_EQ(qwen2::pieces("\xC3"
                            "A\x80z"),
              (Pieces{"\xC3\x81z"}));
}

TEST(LlmTokenizer, DecodeGivesTheTextBack) {
    const LlmTokenizer& t = from_json();
    for (const std::string text :
         {"a photo of a cat", "東京の夜景、ネオン、雨", "a cat 🐱 with a hat 🎩",
          "<|im_start|>user\nhello<|im_end|>\n", "tabs\tand\nnewlines"}) {
        EXPECT_EQ(t.decode(t.encode(text)), text);
    }
}

TEST(LlmTokenizer, InvalidUtf8IsReadAsTheReferenceReadsIt) {
    const LlmTokenizer& t = from_json();
    // A stray continuation byte and a byte F8-FF are skipped.
    EXPECT_EQ(t.encode("cat\x80\xFF dog"), t.encode("cat dog"));
    // A lead byte takes the next byte whatever it is: C3 'A' reads as U+00C1.
    EXPECT_EQ(t.encode("\xC3"
                       "A"),
              t.encode("\xC3\x81"));
    // A character cut off by the end of the text (or a special token) is dropped.
    EXPECT_EQ(t.encode("cat\xE6\x9D"), t.encode("cat"));
    EXPECT_EQ(t.encode("cat\xE6<|im_end|>"), t.encode("cat<|im_end|>"));
    // Never a crash: every byte value, alone and in runs.
    std::string all;
    for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
    for (int b = 255; b >= 0; --b) all.append(3, static_cast<char>(b));
    const std::vector<int32_t> ids = t.encode(all);
    EXPECT_FALSE(ids.empty());
    for (int32_t id : ids) EXPECT_LT(static_cast<size_t>(id), t.vocab_size());
}

TEST(LlmTokenizer, SameIdsFromSeveralThreads) {
    const LlmTokenizer& t = from_json();
    std::vector<std::thread> threads;
    std::vector<size_t> ok(4, 0);
    for (size_t k = 0; k < ok.size(); ++k) {
        threads.emplace_back([&, k] {
            for (const Case& c : reference_cases()) ok[k] += t.encode(c.text) == c.ids;
        });
    }
    for (auto& th : threads) th.join();
    for (size_t n : ok) EXPECT_EQ(n, reference_cases().size());
}

// Load times for README.md (printed; the bound is loose for a loaded test machine).
TEST(LlmTokenizer, LoadsTheRealVocabularyQuickly) {
    using clock = std::chrono::steady_clock;
    auto ms_of = [](auto&& fn) {
        const auto t0 = clock::now();
        fn();
        return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    };
    const double json_ms = ms_of([] { LlmTokenizer::from_file(qwen2_dir() + "/tokenizer.json"); });
    const double vm_ms = ms_of([] {
        LlmTokenizer::from_vocab_merges(qwen2_dir() + "/vocab.json", qwen2_dir() + "/merges.txt");
    });
    const auto md = from_json().to_gguf_metadata();
    const double gguf_ms = ms_of([&] { LlmTokenizer::from_gguf_metadata(md, "m.gguf"); });
    std::printf(
        "load: tokenizer.json %.0f ms, vocab.json + merges.txt %.0f ms, GGUF metadata "
        "%.0f ms\n",
        json_ms, vm_ms, gguf_ms);
    EXPECT_LT(json_ms, 3000.0);
    EXPECT_LT(vm_ms, 3000.0);
}

std::string one_line_error(const std::function<void()>& fn) {
    const std::string msg = error_of(fn);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
}

TEST(LlmTokenizer, OtherVocabulariesAreRefusedByName) {
    // CLIP's vocab.json + merges.txt (end-of-word symbols, <|startoftext|>).
    const std::string clip = one_line_error([] {
        LlmTokenizer::from_vocab_merges_bytes(R"({"a": 0, "<|startoftext|>": 1})",
                                              "#version: 0.2\n", "clip");
    });
    EXPECT_NE(clip.find("clip"), std::string::npos) << clip;
    // A T5 (Unigram) tokenizer.json.
    const std::string t5 = one_line_error([] {
        LlmTokenizer::from_json_bytes(R"({"model": {"type": "Unigram", "vocab": []}})", "t5.json");
    });
    EXPECT_NE(t5.find("t5.json: a tokenizer.json of model type \"Unigram\", not \"BPE\""),
              std::string::npos)
        << t5;
    EXPECT_NE(one_line_error([] {
                  LlmTokenizer::from_json_bytes("{\"model\": ", "x.json");
              }).find("x.json: not valid JSON"),
              std::string::npos);
    EXPECT_NE(one_line_error([] {
                  LlmTokenizer::from_vocab_merges_bytes(R"({"a": {"b": 1}})", "", "v");
              }).find("token 'a' has an object where an integer id belongs"),
              std::string::npos);
    EXPECT_NE(one_line_error([] {
                  LlmTokenizer::from_vocab_merges_bytes(R"({"a": "zero"})", "", "v");
              }).find("token 'a' has a string where an integer id belongs"),
              std::string::npos);
    // Documents of another shape.
    for (const char* doc : {"42", "\"text\"", "null", "[1, 2]", "{}"}) {
        EXPECT_NE(one_line_error([&] {
                      LlmTokenizer::from_vocab_merges_bytes(doc, "", "v");
                  }).find("v: the vocabulary is empty"),
                  std::string::npos)
            << doc;
        EXPECT_NE(one_line_error([&] {
                      LlmTokenizer::from_json_bytes(doc, "t.json");
                  }).find("t.json: not a Hugging Face tokenizer.json"),
                  std::string::npos)
            << doc;
    }
    // A Llama 3 GGUF: byte-level BPE too, another pre-tokenizer.
    auto md = from_json().to_gguf_metadata();
    md["tokenizer.ggml.pre"] = {std::string("llama-bpe")};
    EXPECT_FALSE(LlmTokenizer::gguf_has_vocab(md));
    EXPECT_NE(one_line_error([&] {
                  LlmTokenizer::from_gguf_metadata(md, "llama.gguf");
              }).find("llama.gguf: GGUF metadata tokenizer.ggml.pre is \"llama-bpe\""),
              std::string::npos);
    auto bad_merge = from_json().to_gguf_metadata();
    std::get<MetadataArray>(bad_merge["tokenizer.ggml.merges"].value)[3] = {
        std::string("nosuch1 nosuch2")};
    EXPECT_NE(one_line_error([&] { LlmTokenizer::from_gguf_metadata(bad_merge, "m.gguf"); })
                  .find("m.gguf: tokenizer.ggml.merges entry 3: the merge 'nosuch1 nosuch2' uses "
                        "'nosuch1'"),
              std::string::npos);
}

class LlmTokenizerSearchTest : public test::TokenizerSearchFixture {
  protected:
    void put(const fs::path& dir, const char* name) {
        fs::create_directories(dir);
        fs::copy_file(fs::path(qwen2_dir()) / name, dir / name);
    }
    void put_vocab_merges(const fs::path& dir) {
        put(dir, "vocab.json");
        put(dir, "merges.txt");
    }
    // CLIP's files beside a model: a byte-level BPE with end-of-word symbols.
    void put_clip(const fs::path& dir) {
        fs::create_directories(dir);
        std::ofstream(dir / "vocab.json") << R"({"a": 0, "a</w>": 1, "<|startoftext|>": 2})";
        std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
    }
};

TEST_F(LlmTokenizerSearchTest, TokenizerDirThenEnvThenBesideTheLlmThenGguf) {
    const std::string text = "a lovely cat";
    const std::vector<int32_t> want = from_json().encode(text);

    // --tokenizer-dir DIR/qwen2/ wins over everything after it.
    put(root_ / "tok" / "qwen2", "tokenizer.json");
    put_vocab_merges(root_ / "env" / "qwen2");
    LlmTokenizerSearch s;
    s.use_builtin = false;  // these tests look at the places searched
    s.tokenizer_dir = (root_ / "tok").string();
    s.llm_path = (root_ / "llm" / "qwen3.safetensors").string();
    EXPECT_EQ(find_llm_tokenizer(s).encode(text), want);

    // SD_TOKENIZER_DIR next, with vocab.json + merges.txt.
    s.tokenizer_dir.clear();
    setenv("SD_TOKENIZER_DIR", (root_ / "env").string().c_str(), 1);
    EXPECT_EQ(find_llm_tokenizer(s).encode(text), want);
    s.use_env = false;

    // Beside the LLM file: CLIP's files there are skipped, a T5 tokenizer.json in tokenizer/
    // too; diffusers' tokenizer/ beside text_encoder/ is found.
    put_clip(root_ / "zimage" / "text_encoder");
    fs::create_directories(root_ / "zimage" / "text_encoder" / "tokenizer");
    std::ofstream(root_ / "zimage" / "text_encoder" / "tokenizer" / "tokenizer.json")
        << R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]], "unk_id": 0}})";
    put(root_ / "zimage" / "tokenizer", "tokenizer.json");
    s.llm_path = (root_ / "zimage" / "text_encoder" / "model.safetensors").string();
    EXPECT_EQ(find_llm_tokenizer(s).encode(text), want);

    // Around the model path (-m a diffusers folder) when the LLM has none.
    s.llm_path = (root_ / "llm" / "qwen3.safetensors").string();
    s.model_path = (root_ / "zimage").string();
    EXPECT_EQ(find_llm_tokenizer(s).encode(text), want);

    // The GGUF metadata of the LLM file, then of the model file.
    TensorFile other;
    other.path = "llama.gguf";
    other.metadata = from_json().to_gguf_metadata();
    other.metadata["tokenizer.ggml.pre"] = {std::string("llama-bpe")};
    TensorFile gguf;
    gguf.path = "qwen3.gguf";
    gguf.metadata = from_json().to_gguf_metadata();
    LlmTokenizerSearch g;
    g.use_env = false;
    g.llm_file = &other;
    g.model_file = &gguf;
    EXPECT_EQ(find_llm_tokenizer(g).encode(text), want);
    g.llm_file = &gguf;
    g.model_file = nullptr;
    EXPECT_EQ(find_llm_tokenizer(g).encode(text), want);
}

TEST_F(LlmTokenizerSearchTest, BadFilesInNamedFoldersAreErrors) {
    LlmTokenizerSearch s;
    s.use_builtin = false;  // these tests look at the places searched
    s.tokenizer_dir = (root_ / "tok").string();
    fs::create_directories(root_ / "tok" / "qwen2");
    std::ofstream(root_ / "tok" / "qwen2" / "tokenizer.json") << "{ broken";
    EXPECT_NE(error_of([&] { find_llm_tokenizer(s); }).find("not valid JSON"), std::string::npos);
    fs::remove(root_ / "tok" / "qwen2" / "tokenizer.json");
    put(root_ / "tok" / "qwen2", "vocab.json");
    EXPECT_NE(error_of([&] { find_llm_tokenizer(s); }).find("holds vocab.json but not merges.txt"),
              std::string::npos);
    fs::remove_all(root_ / "tok");
    put_clip(root_ / "tok" / "qwen2");
    EXPECT_NE(error_of([&] { find_llm_tokenizer(s); }).find("a CLIP vocabulary"),
              std::string::npos);
}

TEST_F(LlmTokenizerSearchTest, NothingFoundNamesWhatAndEveryPlace) {
    put_clip(root_ / "models");
    TensorFile clip_gguf;
    clip_gguf.path = (root_ / "sd.gguf").string();
    clip_gguf.metadata["tokenizer.ggml.model"] = {std::string("clip")};
    LlmTokenizerSearch s;
    s.use_builtin = false;  // these tests look at the places searched
    s.tokenizer_dir = (root_ / "tok").string();
    s.llm_path = (root_ / "models" / "qwen3.safetensors").string();
    s.model_file = &clip_gguf;
    const std::string msg = error_of([&] { find_llm_tokenizer(s); });
    for (const std::string& part :
         {std::string("no Qwen2 tokenizer vocabulary found"), std::string("tokenizer.json"),
          std::string("vocab.json and merges.txt"),
          std::string("1. --tokenizer-dir: ") + (root_ / "tok" / "qwen2").string(),
          std::string("2. SD_TOKENIZER_DIR: not set"),
          std::string("3. beside the LLM file: ") + (root_ / "models").string() +
              "/: " + (root_ / "models").string(),
          std::string("a CLIP vocabulary"),
          std::string("4. beside the LLM file: ") + (root_ / "models" / "tokenizer").string(),
          std::string("5. beside the LLM file: ") + (root_ / "tokenizer").string(),
          std::string("6. beside the model: no path given"),
          std::string("7. GGUF metadata of the LLM file: no file given"),
          std::string("8. GGUF metadata of the model file ") + clip_gguf.path,
          std::string("--tokenizer-dir DIR")}) {
        EXPECT_NE(msg.find(part), std::string::npos) << part << "\nmessage: " << msg;
    }
}

}  // namespace
// With no vocabulary anywhere the built-in one is taken: the reference's ids for every string of
// expected_ids.jsonl.
TEST(BuiltinQwen2Vocabulary, GivesTheReferenceIds) {
    ::unsetenv("SD_TOKENIZER_DIR");
    const LlmTokenizer builtin = find_llm_tokenizer(LlmTokenizerSearch{});
    EXPECT_EQ(builtin.id_of("<|im_start|>"), 151644);
    EXPECT_EQ(matching_cases(builtin, "built-in"), 437u);
}

}  // namespace sd
