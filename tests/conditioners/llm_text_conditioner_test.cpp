// The LLM text path padded to a length (FLUX.2-klein's 512): the ids padded with the
// vocabulary's pad id (<|endoftext|>) and the padding masked from the keys, so the prompt's own
// states are those of the unpadded prompt (causal attention never reads the padding), the
// hidden layers asked for concatenated; a tiny random Qwen3 of the full Qwen2 vocabulary.
// FLUX.2-dev's form: Mistral's <s> in front and the states zero-padded to a length after the
// LLM; a tiny random Mistral-layout LLM on a tekken vocabulary made by the test.
#include "conditioners/llm_text_conditioner.h"

#include <gtest/gtest.h>

#include <map>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"
#include "tokenizer/tiny_mistral_vocabulary.h"

namespace sd {
namespace {

constexpr int64_t kWidth = 32, kHeadDim = 16, kVocab = 151936;

// Qwen3 names: 2 blocks, 2 query heads / 1 key-value head of 16, feed-forward 64 (Mistral's
// layout with `qk_norm` false).
std::string tiny_llm(int64_t vocab, bool qk_norm, const std::string& name) {
    std::map<std::string, Tensor> p;
    uint32_t seed = 500;
    auto matrix = [&](const std::string& name, int64_t out, int64_t in) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name] = test::random_tensor({out, in}, seed++, -bound, bound);
    };
    auto gain = [&](const std::string& name, int64_t n) {
        p[name] = test::random_tensor({n}, seed++, 0.5f, 1.5f);
    };
    matrix("model.embed_tokens.weight", vocab, kWidth);
    for (int i = 0; i < 2; ++i) {
        const std::string b = "model.layers." + std::to_string(i) + ".";
        matrix(b + "self_attn.q_proj.weight", 2 * kHeadDim, kWidth);
        matrix(b + "self_attn.k_proj.weight", kHeadDim, kWidth);
        matrix(b + "self_attn.v_proj.weight", kHeadDim, kWidth);
        matrix(b + "self_attn.o_proj.weight", kWidth, 2 * kHeadDim);
        if (qk_norm) {
            gain(b + "self_attn.q_norm.weight", kHeadDim);
            gain(b + "self_attn.k_norm.weight", kHeadDim);
        }
        gain(b + "input_layernorm.weight", kWidth);
        gain(b + "post_attention_layernorm.weight", kWidth);
        matrix(b + "mlp.gate_proj.weight", 64, kWidth);
        matrix(b + "mlp.up_proj.weight", 64, kWidth);
        matrix(b + "mlp.down_proj.weight", kWidth, 64);
    }
    gain("model.norm.weight", kWidth);
    return test::write_f32_safetensors(p, name);
}

std::string tiny_qwen3() {
    return tiny_llm(kVocab, true, "llm_cond_qwen3");
}

Llm load_llm(const std::string& path, const LlmOptions& options = {}) {
    ModelFiles files;
    files.add(path, ModelRole::Llm);
    return Llm::load(Weights(files, "text_encoders.llm."), options);
}

LlmTokenizer vocabulary() {
    const std::string dir = test::fixtures_dir() + "/tokenizers/qwen2/";
    return LlmTokenizer::from_vocab_merges(dir + "vocab.json", dir + "merges.txt");
}

TEST(LlmTextConditioner, PadsToALengthWithMaskedPadding) {
    const std::string path = tiny_qwen3();
    const LlmPromptTemplate padded{"<|im_start|>user\n", "<|im_end|>\n", {1, 2}, 0, 24};
    const LlmTextConditioner cond(vocabulary(), load_llm(path), padded);
    std::vector<int32_t> ids;
    std::vector<float> weights;
    cond.tokenize("a lovely cat", ids, weights);
    const auto n = static_cast<int64_t>(ids.size());
    ASSERT_LT(n, 24);
    EXPECT_EQ(cond.count_tokens("a lovely cat"), static_cast<size_t>(n));  // padding not counted

    ConditionRequest request;
    request.prompt = "a lovely cat";
    const Tensor got = cond.encode(request).context;
    ASSERT_EQ(got.shape(), (Shape{1, 24, 2 * kWidth}));  // layers 1 and 2 side by side

    // The prompt's rows are the unpadded prompt's states.
    const Llm llm = load_llm(path);
    const std::vector<int> layers = {1, 2};
    const Tensor plain = llm.forward(ids, layers);
    test::expect_close(got.narrow(1, 0, n).contiguous(), plain, 1e-5, 1e-5, "prompt rows");
    // The whole is the LLM on the ids padded with <|endoftext|> (151643), padding keys masked.
    std::vector<float> mask(24, 0.0f);
    std::fill(mask.begin(), mask.begin() + n, 1.0f);
    ids.resize(24, 151643);
    LlmInput input;
    input.key_mask = mask;
    test::expect_close(got, llm.forward(ids, layers, input), 1e-5, 1e-5, "padded");
}

TEST(LlmTextConditioner, NoPaddingWhenNotAsked) {
    const LlmPromptTemplate plain{"<|im_start|>user\n", "<|im_end|>\n", {2}, 0};
    const LlmTextConditioner cond(vocabulary(), load_llm(tiny_qwen3()), plain);
    ConditionRequest request;
    request.prompt = "a lovely cat";
    EXPECT_EQ(cond.encode(request).context.size(1),
              static_cast<int64_t>(cond.count_tokens("a lovely cat")));
}

TEST(LlmTextConditioner, MistralBosInFrontAndStatesZeroPadded) {
    const std::string path = tiny_llm(1265, false, "llm_cond_mistral");
    LlmOptions o;
    o.head_dim = kHeadDim;
    o.rope_theta = 1e9f;
    o.eps = 1e-5f;
    const LlmPromptTemplate dev{
        "[SYSTEM_PROMPT]be brief[/SYSTEM_PROMPT][INST]", "[/INST]", {1, 2}, 0, 0, 24};
    const LlmTextConditioner cond(
        LlmTokenizer::from_tekken_json_bytes(test::tiny_tekken_json(), "tiny tekken.json"),
        load_llm(path, o), dev);
    std::vector<int32_t> ids;
    std::vector<float> weights;
    cond.tokenize("(hello:1.5) world", ids, weights);
    ASSERT_EQ(weights.size(), ids.size());
    ASSERT_GE(ids.size(), 4u);
    EXPECT_EQ(ids[0], 1);   // <s>
    EXPECT_EQ(ids[1], 17);  // [SYSTEM_PROMPT]
    EXPECT_EQ(weights[0], 1.0f);
    // "hello" (1259) at 1.5, " world" (1264) at 1, then [/INST].
    EXPECT_EQ(std::vector<int32_t>(ids.end() - 3, ids.end()),
              (std::vector<int32_t>{1259, 1264, 4}));
    EXPECT_EQ(weights[ids.size() - 3], 1.5f);
    EXPECT_EQ(weights[ids.size() - 2], 1.0f);
    const auto n = static_cast<int64_t>(ids.size());
    ASSERT_LT(n, 24);

    ConditionRequest request;
    request.prompt = "hello world";
    const Tensor got = cond.encode(request).context;
    ASSERT_EQ(got.shape(), (Shape{1, 24, 2 * kWidth}));
    cond.tokenize("hello world", ids, weights);
    const Llm llm = load_llm(path, o);
    const std::vector<int> layers = {1, 2};
    const auto m = static_cast<int64_t>(ids.size());
    // The LLM ran on the ids alone (no padding tokens, no mask); zero rows follow.
    test::expect_close(got.narrow(1, 0, m).contiguous(), llm.forward(ids, layers), 1e-6, 1e-6,
                       "prompt rows");
    for (float v : got.narrow(1, m, 24 - m).contiguous().to_vector()) ASSERT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace sd
