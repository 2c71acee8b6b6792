// The CLIP image tower: a tiny random one (width 64, 4 heads, 3 layers, 28 px images in 14 px
// patches: 5 tokens, projection 48) loaded as a --clip_vision file, against the independent numpy
// implementation in clip_vision_reference.py: the hidden states of every layer (the reference's
// clip_skip = -2), of the penultimate one and the pooled projection, with GELU and quick GELU;
// the reference's preprocessing; bad input. And the text tower through the encoder layer it now
// shares (nn/clip_blocks.h), against the same script.
#include "models/clip_vision_encoder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "io/io_test_util.h"
#include "models/clip_text_encoder.h"
#include "models/numpy_reference.h"
#include "models/tiny_clip_vision.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;

using test::add_clip_encoder_layers;
using test::add_clip_norm;
using test::kTinyClipDepth;
using test::kTinyClipFfn;
using test::kTinyClipHeads;
using test::kTinyClipImage;
using test::kTinyClipPatch;
using test::kTinyClipProj;
using test::kTinyClipTokens;
using test::kTinyClipWidth;
constexpr int64_t kWidth = kTinyClipWidth, kHeads = kTinyClipHeads, kFfn = kTinyClipFfn,
                  kDepth = kTinyClipDepth, kProj = kTinyClipProj, kPatch = kTinyClipPatch;
constexpr int64_t kImage = kTinyClipImage, kTokens = kTinyClipTokens;
constexpr const char* kScript = "clip_vision_reference.py";

Params tiny_tower(bool projection) {
    return test::tiny_clip_vision(projection);
}

void add_encoder(Params& p, const std::string& prefix, int64_t depth, uint32_t& seed) {
    add_clip_encoder_layers(p, prefix, depth, seed);
}

void add_norm(Params& p, const std::string& name, uint32_t& seed) {
    add_clip_norm(p, name, seed);
}

ClipVisionEncoder load_tower(const std::string& path, bool quick_gelu) {
    ModelFiles files;
    files.add(path, ModelRole::ClipVision);
    ClipVisionOptions o;
    o.heads = kHeads;
    o.quick_gelu = quick_gelu;
    return ClipVisionEncoder::load(Weights(files, "cond_stage_model.transformer.vision_model."),
                                   nullptr, o);
}

double max_abs_error(const Tensor& got, const Tensor& want) {
    const std::vector<float> g = got.to_vector(), w = want.to_vector();
    double err = 0;
    for (size_t i = 0; i < g.size(); ++i)
        err = std::max(err, std::abs(static_cast<double>(g[i]) - w[i]));
    return err;
}

Tensor scalar(float v) {
    return Tensor::from_vector({1}, {v});
}

class ClipVisionTest : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        const std::string pid = std::to_string(::getpid());
        model_ = new std::string(test::write_f32_safetensors(tiny_tower(true), "clipv_" + pid));
    }
    static void TearDownTestSuite() {
        std::remove(model_->c_str());
        delete model_;
    }

    // forward (pooled = false) or pooled against numpy on a random batch.
    static void expect_as_numpy(int64_t batch, bool quick, int clip_skip, bool pooled) {
        const ClipVisionEncoder tower = load_tower(*model_, quick);
        const Tensor pixels = test::random_tensor({batch, 3, kImage, kImage}, 31, -2.0f, 2.0f);
        const Tensor got =
            pooled ? tower.pooled(pixels, clip_skip) : tower.forward(pixels, clip_skip);
        const Shape shape = pooled ? Shape{batch, kProj} : Shape{batch, kTokens, kWidth};
        ASSERT_EQ(got.shape(), shape);
        const std::string name = "clipv_" + std::to_string(::getpid()) + (pooled ? "_pooled" : "") +
                                 (quick ? "_quick" : "") + "_skip" + std::to_string(clip_skip);
        const Tensor want = test::numpy_reference(kScript, *model_,
                                                  {{"mode", scalar(pooled ? 1.0f : 0.0f)},
                                                   {"pixels", pixels},
                                                   {"heads", scalar(static_cast<float>(kHeads))},
                                                   {"quick", scalar(quick ? 1.0f : 0.0f)},
                                                   {"skip", scalar(static_cast<float>(clip_skip))}},
                                                  shape, name);
        const double err = max_abs_error(got, want);
        std::printf("  %s, %s, clip skip %d, batch %lld: max abs error %.3g\n",
                    pooled ? "pooled" : "hidden states", quick ? "quick GELU" : "GELU", clip_skip,
                    (long long)batch, err);
        EXPECT_LT(err, 1e-4);
    }

    static std::string* model_;
};
std::string* ClipVisionTest::model_ = nullptr;

TEST_F(ClipVisionTest, ReadsItsShapeFromTheWeights) {
    const ClipVisionEncoder tower = load_tower(*model_, false);
    const ClipVisionConfig& c = tower.config();
    EXPECT_EQ(c.hidden, kWidth);
    EXPECT_EQ(c.layers, kDepth);
    EXPECT_EQ(c.heads, kHeads);
    EXPECT_EQ(c.intermediate, kFfn);
    EXPECT_EQ(c.patch, kPatch);
    EXPECT_EQ(c.image_size, kImage);
    EXPECT_EQ(c.positions, kTokens);
    EXPECT_EQ(c.projection, kProj);  // visual_projection.weight found under the vision prefix
    EXPECT_FALSE(c.quick_gelu);
    EXPECT_TRUE(tower.has_projection());
    // Without options: 64-wide heads up to 1024 wide, quick GELU there (OpenAI's towers).
    ModelFiles files;
    files.add(*model_, ModelRole::ClipVision);
    const ClipVisionConfig d =
        ClipVisionEncoder::load(Weights(files, "cond_stage_model.transformer.vision_model."))
            .config();
    EXPECT_EQ(d.heads, 1);
    EXPECT_TRUE(d.quick_gelu);
}

TEST_F(ClipVisionTest, AllLayersAsNumpy) {
    expect_as_numpy(1, false, -2, false);  // Wan's get_clip_vision_output(image, false, -2)
    // The reference's convention: clip_skip <= 0 runs every layer, as 1 does; 2 skips the last.
    const ClipVisionEncoder tower = load_tower(*model_, false);
    const Tensor pixels = test::random_tensor({1, 3, kImage, kImage}, 5);
    const Tensor all = tower.forward(pixels, -2);
    EXPECT_EQ(max_abs_error(all, tower.forward(pixels, 1)), 0.0);
    EXPECT_EQ(max_abs_error(all, tower.forward(pixels)), 0.0);
    EXPECT_GT(max_abs_error(all, tower.forward(pixels, 2)), 1e-2);
}

TEST_F(ClipVisionTest, PenultimateLayerAsNumpy) {
    expect_as_numpy(2, false, 2, false);
}

TEST_F(ClipVisionTest, QuickGeluAsNumpy) {
    expect_as_numpy(1, true, 1, false);
}

TEST_F(ClipVisionTest, PooledProjectionAsNumpy) {
    expect_as_numpy(2, false, -1, true);
    expect_as_numpy(1, true, 2, true);
}

TEST_F(ClipVisionTest, RefusesWhatItCannotTake) {
    const ClipVisionEncoder tower = load_tower(*model_, false);
    const std::string wrong = test::error_of([&] {
        tower.forward(test::random_tensor({1, 3, 42, 42}, 1));
    });
    EXPECT_NE(wrong.find("[B, 3, 28, 28]"), std::string::npos) << wrong;
    EXPECT_THROW(tower.forward(test::random_tensor({3, 28, 28}, 2)), Error);
    EXPECT_THROW(tower.forward(Tensor()), Error);
    EXPECT_THROW(tower.forward(test::random_tensor({1, 3, 28, 28}, 3), kDepth + 1), Error);

    const std::string bare =
        test::write_f32_safetensors(tiny_tower(false), "clipv_bare_" + std::to_string(::getpid()));
    const ClipVisionEncoder no_proj = load_tower(bare, false);
    EXPECT_FALSE(no_proj.has_projection());
    EXPECT_EQ(no_proj.config().projection, 0);
    const std::string none = test::error_of([&] {
        no_proj.pooled(test::random_tensor({1, 3, 28, 28}, 4));
    });
    EXPECT_NE(none.find("visual_projection"), std::string::npos) << none;
    std::remove(bare.c_str());
}

// clip_preprocess against numpy: down, up, the portrait and landscape sizes of Wan's videos.
TEST(ClipVisionPreprocess, AsTheReference) {
    const int64_t sizes[][4] = {{37, 53, 28, 28},     {10, 7, 28, 28},      {480, 832, 224, 224},
                                {832, 480, 224, 224}, {224, 224, 224, 224}, {100, 100, 224, 224},
                                {33, 90, 20, 30}};
    uint32_t seed = 50;
    for (const auto& s : sizes) {
        // Beyond [0, 1] in places, to see the clamp.
        const Tensor image = test::random_tensor({1, 3, s[0], s[1]}, seed++, -0.1f, 1.1f);
        const Tensor got = clip_image_preprocess(image, s[2], s[3]);
        ASSERT_EQ(got.shape(), (Shape{1, 3, s[2], s[3]}));
        const std::string name = "clipv_pre_" + std::to_string(::getpid()) + "_" +
                                 std::to_string(s[0]) + "x" + std::to_string(s[1]);
        const Tensor want = test::numpy_reference(
            kScript, "none",
            {{"mode", scalar(2.0f)},
             {"image", image},
             {"size",
              Tensor::from_vector({2}, {static_cast<float>(s[2]), static_cast<float>(s[3])})}},
            {1, 3, s[2], s[3]}, name);
        const double err = max_abs_error(got, want);
        std::printf("  %lld x %lld -> %lld x %lld: max abs error %.3g\n", (long long)s[0],
                    (long long)s[1], (long long)s[2], (long long)s[3], err);
        EXPECT_LT(err, 1e-5) << s[0] << " x " << s[1] << " -> " << s[2] << " x " << s[3];
    }
    EXPECT_EQ(clip_vision_preprocess(test::random_tensor({1, 3, 300, 200}, 9)).shape(),
              (Shape{1, 3, 224, 224}));
    EXPECT_THROW(clip_vision_preprocess(test::random_tensor({1, 4, 8, 8}, 1)), Error);
    EXPECT_THROW(clip_image_preprocess(test::random_tensor({1, 3, 8, 8}, 1), 0, 4), Error);
}

// The text tower on the shared encoder layer (causal attention, final layer norm): a tiny one
// (64 wide: one 64-wide head, GELU, as ClipTextEncoder reads such a width) against numpy.
TEST(ClipTextOnSharedLayer, AsNumpy) {
    constexpr int64_t kVocab = 100, kLength = 16, kTextDepth = 2;
    Params p;
    uint32_t seed = 1300;
    p["text_model.embeddings.token_embedding.weight"] =
        test::random_tensor({kVocab, kWidth}, seed++);
    p["text_model.embeddings.position_embedding.weight"] =
        test::random_tensor({kLength, kWidth}, seed++, -0.5f, 0.5f);
    add_encoder(p, "text_model.", kTextDepth, seed);
    add_norm(p, "text_model.final_layer_norm", seed);
    const std::string pid = std::to_string(::getpid());
    const std::string path = test::write_f32_safetensors(p, "clipt_" + pid);
    ModelFiles files;
    files.add(path, ModelRole::TextEncoder);
    const ClipTextEncoder te =
        ClipTextEncoder::load(Weights(files, "cond_stage_model.transformer.text_model."));
    std::vector<float> ids(kLength);
    std::vector<int32_t> ids_i(kLength);
    for (int64_t i = 0; i < kLength; ++i) ids_i[i] = static_cast<int32_t>((i * 37 + 5) % kVocab);
    for (int64_t i = 0; i < kLength; ++i) ids[i] = static_cast<float>(ids_i[i]);
    Tensor tokens = Tensor::empty({1, kLength}, DType::I32);
    std::copy(ids_i.begin(), ids_i.end(), tokens.data<int32_t>());
    for (const auto& [skip, final_norm] : {std::pair{1, true}, std::pair{2, false}}) {
        const Tensor got = te.forward(tokens, skip, {}, final_norm);
        const Tensor want = test::numpy_reference(
            kScript, path,
            {{"mode", scalar(3.0f)},
             {"tokens", Tensor::from_vector({1, kLength}, ids)},
             {"heads", scalar(1.0f)},
             {"quick", scalar(0.0f)},
             {"skip", scalar(static_cast<float>(skip))},
             {"final_norm", scalar(final_norm ? 1.0f : 0.0f)}},
            {1, kLength, kWidth}, "clipt_" + pid + "_" + std::to_string(skip));
        const double err = max_abs_error(got, want);
        std::printf("  text tower, clip skip %d: max abs error %.3g\n", skip, err);
        EXPECT_LT(err, 1e-4) << skip;
    }
    std::remove(path.c_str());
}

}  // namespace
}  // namespace sd
