// T5 encoder: a tiny random T5 (2 blocks, width 64, 4 heads, 8 buckets) and UMT5 against an
// independent numpy computation (tests/models/t5_reference.py), the relative position
// buckets against hand-computed values, name forms, and mis-shaped or foreign files.
#include "models/t5_encoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <span>
#include <vector>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

template <typename T>
std::vector<T> read_raw(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    const auto bytes = static_cast<size_t>(in.tellg());
    std::vector<T> v(bytes / sizeof(T));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(bytes));
    return v;
}

// The reference files, made once per test program.
const std::string& reference_dir() {
    static const std::string dir = [] {
        const std::string d = test::temp_path("t5_reference");
        test::run_or_fail("rm -rf " + d + " && mkdir -p " + d + " && /usr/bin/python3 " +
                          test::tests_source_dir() + "/models/t5_reference.py " + d);
        return d;
    }();
    return dir;
}

T5Encoder load(const std::string& file, ModelRole role) {
    ModelFiles files;
    files.add(reference_dir() + "/" + file, role);
    return T5Encoder::load(Weights(files, canonical_prefix(ModelRole::T5)));
}

void expect_matches_reference(const T5Encoder& t5, const std::string& expected = "expected.bin") {
    const auto ids = read_raw<int32_t>(reference_dir() + "/ids.bin");
    const auto want = read_raw<float>(reference_dir() + "/" + expected);
    ASSERT_EQ(ids.size(), 40u);
    const Tensor got = t5.forward(ids);
    ASSERT_EQ(got.shape(), (Shape{1, 40, 64}));
    const test::Diff d = test::compare(got, Tensor::from_vector({1, 40, 64}, want), /*floor=*/1e-2);
    EXPECT_LT(d.max_abs, 1e-4) << "worst element " << d.worst;
}

TEST(T5Encoder, MatchesNumpyReference) {
    const T5Encoder t5 = load("t5_tiny.safetensors", ModelRole::T5);
    const T5Config& c = t5.config();
    EXPECT_EQ(c.layers, 2);
    EXPECT_EQ(c.width, 64);
    EXPECT_EQ(t5.width(), 64);
    EXPECT_EQ(c.heads, 4);
    EXPECT_EQ(c.head_dim, 16);
    EXPECT_EQ(c.ffn, 96);
    EXPECT_EQ(c.buckets, 8);
    EXPECT_EQ(c.vocab, 50);
    expect_matches_reference(t5);
}

// UMT5 (Wan's text encoder): each block's own relative position bias.
TEST(T5Encoder, Umt5HasAPositionBiasInEveryBlock) {
    const T5Encoder umt5 = load("umt5_tiny.safetensors", ModelRole::T5);
    EXPECT_TRUE(umt5.per_block_position_bias());
    EXPECT_FALSE(load("t5_tiny.safetensors", ModelRole::T5).per_block_position_bias());
    expect_matches_reference(umt5, "umt5_expected.bin");
}

TEST(T5Encoder, SingleFileNamesInACheckpoint) {
    // ComfyUI / stable-diffusion.cpp's text_encoders.t5xxl.transformer.* in a -m file.
    expect_matches_reference(load("t5_tiny_comfy.safetensors", ModelRole::Checkpoint));
    expect_matches_reference(load("t5_tiny_comfy.safetensors", ModelRole::T5));
    // llama.cpp's T5 GGUF names.
    expect_matches_reference(load("t5_tiny_llama.safetensors", ModelRole::T5));
    // The embedding under its tied name alone.
    expect_matches_reference(load("t5_tiny_tied.safetensors", ModelRole::T5));
}

TEST(T5Encoder, MaskedTrailingKeysAreAsIfAbsent) {
    // Keys masked with -inf (Chroma's chroma_use_t5_mask on its <pad>s) take no part: with
    // the last 15 ids masked, the first 25 states are those of the 25 ids alone (relative
    // positions among them are unchanged).
    const T5Encoder t5 = load("t5_tiny.safetensors", ModelRole::T5);
    const auto ids = read_raw<int32_t>(reference_dir() + "/ids.bin");
    std::vector<float> mask(ids.size(), 0.0f);
    std::fill(mask.begin() + 25, mask.end(), -INFINITY);
    const Tensor masked = t5.forward(ids, mask).narrow(1, 0, 25).contiguous();
    const Tensor alone = t5.forward(std::span<const int32_t>(ids).first(25));
    test::expect_close(masked, alone, 1e-5, 1e-5, "masked");
    const Tensor plain = t5.forward(ids).narrow(1, 0, 25).contiguous();
    EXPECT_GT(test::compare(plain, alone, 1e-2).max_abs, 1e-4) << "the padding changes nothing";
    EXPECT_THROW(t5.forward(ids, std::vector<float>(3, 0.0f)), Error);  // not one per id
}

TEST(T5Encoder, ReleasedWeightsComeBack) {
    const T5Encoder t5 = load("t5_tiny.safetensors", ModelRole::T5);
    EXPECT_GT(t5.weight_pages().bytes(), 0u);
    t5.release_weights();
    expect_matches_reference(t5);
}

TEST(T5Encoder, RelativePositionBuckets) {
    // T5-XXL's 32 buckets, max distance 128: keys before the query use 0..15, after it
    // 16..31; exact below 8, then 8 + floor(log(d / 8) / log(16) * 8), at most 15.
    const std::vector<std::pair<int64_t, int32_t>> want = {
        {0, 0},    {-1, 1},    {1, 17},    {-7, 7},     {7, 23},   {-8, 8},
        {8, 24},   {-11, 8},   {-12, 9},   {-16, 10},   {16, 26},  {-32, 12},
        {-64, 14}, {-127, 15}, {-128, 15}, {-1000, 15}, {128, 31}, {255, 31}};
    for (const auto& [position, bucket] : want)
        EXPECT_EQ(t5_relative_position_bucket(position), bucket) << "position " << position;
    // The tiny model's 8 buckets: exact below 2.
    EXPECT_EQ(t5_relative_position_bucket(-1, 8), 1);
    EXPECT_EQ(t5_relative_position_bucket(1, 8), 5);
    EXPECT_EQ(t5_relative_position_bucket(-16, 8), 3);
    EXPECT_EQ(t5_relative_position_bucket(40, 8), 7);
}

TEST(T5Encoder, WrongShapedTensorIsNamed) {
    const std::string msg = test::error_of([] { load("t5_tiny_bad.safetensors", ModelRole::T5); });
    EXPECT_NE(msg.find("text_encoders.t5xxl.transformer.encoder.block.1.layer.1.DenseReluDense."
                       "wi_1.weight"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("[96, 64]"), std::string::npos) << msg;
}

TEST(T5Encoder, AnotherKindOfFileIsAClearError) {
    // A CLIP text encoder given as --t5xxl.
    ModelFiles files;
    files.add(reference_dir() + "/clip_like.safetensors", ModelRole::T5);
    const std::string msg =
        test::error_of([&] { T5Encoder::load(Weights(files, canonical_prefix(ModelRole::T5))); });
    EXPECT_NE(msg.find("no T5 encoder under 'text_encoders.t5xxl.transformer.'"), std::string::npos)
        << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(T5Encoder, IdOutsideTheVocabulary) {
    const T5Encoder t5 = load("t5_tiny.safetensors", ModelRole::T5);
    const std::vector<int32_t> ids = {1, 2, 50};
    EXPECT_NE(test::error_of([&] { t5.forward(ids); }).find("50"), std::string::npos);
    EXPECT_NE(test::error_of([&] { t5.forward(std::vector<int32_t>{}); }).find("no token ids"),
              std::string::npos);
}

}  // namespace
}  // namespace sd
