// The Qwen2.5-VL vision tower: a tiny random one (width 64, 4 heads, 3 blocks, block 1 with full
// attention) against the independent numpy implementation in qwen2_5_vl_vision_reference.py on
// images of one window, of whole windows and of windows cut at the right and bottom edges; the
// window order by hand; the reference's Edit sizing and CLIP preprocessing; bad input; and the
// real 7B layout (a sparse file from the fixture manifest).
#include "models/qwen2_5_vl_vision.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/numpy_reference.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;

constexpr int64_t kWidth = 64, kHeads = 4, kFfn = 96, kOut = 48, kDepth = 3;

Params tiny_tower() {
    Params p;
    uint32_t seed = 700;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p["visual." + name + ".weight"] = test::random_tensor({out, in}, seed++, -bound, bound);
        p["visual." + name + ".bias"] = test::random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    auto norm = [&](const std::string& name, int64_t n) {
        p["visual." + name + ".weight"] = test::random_tensor({n}, seed++, 0.5f, 1.5f);
    };
    const float bound = 1.0f / std::sqrt(3.0f * 2 * 14 * 14);
    p["visual.patch_embed.proj.weight"] =
        test::random_tensor({kWidth, 3, 2, 14, 14}, seed++, -bound, bound);
    for (int i = 0; i < kDepth; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        norm(b + "norm1", kWidth);
        norm(b + "norm2", kWidth);
        linear(b + "attn.qkv", kWidth, 3 * kWidth);
        linear(b + "attn.proj", kWidth, kWidth);
        linear(b + "mlp.gate_proj", kWidth, kFfn);
        linear(b + "mlp.up_proj", kWidth, kFfn);
        linear(b + "mlp.down_proj", kFfn, kWidth);
    }
    norm("merger.ln_q", kWidth);
    linear("merger.mlp.0", 4 * kWidth, 4 * kWidth);
    linear("merger.mlp.2", 4 * kWidth, kOut);
    return p;
}

VisionOptions tiny_options() {
    VisionOptions o;
    o.heads = kHeads;
    o.fullatt_blocks = {1};
    return o;
}

Qwen25VisionModel load_tower(const std::string& path, const VisionOptions& options) {
    ModelFiles files;
    files.add(path, ModelRole::Llm);
    return Qwen25VisionModel::load(Weights(files, "text_encoders.llm.visual."), options);
}

// max |got - want| / max |want|, the test's measure.
double relative_error(const Tensor& got, const Tensor& want) {
    const std::vector<float> g = got.to_vector(), w = want.to_vector();
    double err = 0, peak = 0;
    for (size_t i = 0; i < g.size(); ++i) {
        err = std::max(err, std::abs(static_cast<double>(g[i]) - w[i]));
        peak = std::max(peak, std::abs(static_cast<double>(w[i])));
    }
    return err / peak;
}

class QwenVisionTest : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        model_ = new std::string(test::write_f32_safetensors(
            tiny_tower(), "qwen_vision_tiny_" + std::to_string(::getpid())));
    }
    static void TearDownTestSuite() {
        std::remove(model_->c_str());
        delete model_;
    }

    // The tower on a random image of h x w px against numpy.
    static void expect_as_numpy(int64_t h, int64_t w, uint32_t seed) {
        const Qwen25VisionModel tower = load_tower(*model_, tiny_options());
        const Tensor pixels = test::random_tensor({1, 3, h, w}, seed, -2.0f, 2.0f);
        const Tensor got = tower.forward(pixels);
        const int64_t units = (h / 28) * (w / 28);
        ASSERT_EQ(got.shape(), (Shape{1, units, kOut}));
        const std::string name = "qwen_vision_" + std::to_string(::getpid()) + "_" +
                                 std::to_string(h) + "x" + std::to_string(w);
        const Tensor want = test::numpy_reference(
            "qwen2_5_vl_vision_reference.py", *model_,
            {{"pixels", pixels},
             {"heads", Tensor::from_vector({1}, {static_cast<float>(kHeads)})},
             {"window", Tensor::from_vector({1}, {112.0f})},
             {"fullatt", Tensor::from_vector({1}, {1.0f})}},
            {1, units, kOut}, name);
        const double err = relative_error(got, want);
        std::printf("  %lld x %lld px: max error %.3g of max |value|\n", (long long)h, (long long)w,
                    err);
        EXPECT_LE(err, 1e-4) << h << " x " << w;
    }

    static std::string* model_;
};
std::string* QwenVisionTest::model_ = nullptr;

TEST_F(QwenVisionTest, ReadsItsShapeFromTheWeights) {
    const VisionConfig c = load_tower(*model_, tiny_options()).config();
    EXPECT_EQ(c.width, kWidth);
    EXPECT_EQ(c.depth, kDepth);
    EXPECT_EQ(c.heads, kHeads);
    EXPECT_EQ(c.head_dim, kWidth / kHeads);
    EXPECT_EQ(c.ffn, kFfn);
    EXPECT_EQ(c.out_width, kOut);
    EXPECT_EQ(c.patch, 14);
    EXPECT_EQ(c.temporal_patch, 2);
    EXPECT_EQ(c.merge, 2);
    EXPECT_EQ(c.fullatt_blocks, std::vector<int>{1});
    // The 7B's full-attention blocks 7, 15, 23, 31: none in a 3-block tower.
    VisionOptions o = tiny_options();
    o.fullatt_blocks = VisionOptions{}.fullatt_blocks;
    EXPECT_TRUE(load_tower(*model_, o).config().fullatt_blocks.empty());
}

TEST_F(QwenVisionTest, OneWindowAsNumpy) {
    expect_as_numpy(56, 84, 11);  // 2 x 3 units: less than one window
}

TEST_F(QwenVisionTest, WholeWindowsAsNumpy) {
    expect_as_numpy(112, 224, 12);  // 4 x 8 units: two windows of 4 x 4
}

TEST_F(QwenVisionTest, WindowsCutAtTheEdgesAsNumpy) {
    expect_as_numpy(168, 252, 13);  // 6 x 9 units: windows of 4 x 4, 4 x 1, 2 x 4 and 2 x 1
}

TEST(QwenVisionWindows, ListUnitsWindowByWindow) {
    const VisionWindows w = vision_windows(3, 5, 2);
    EXPECT_EQ(w.order, (std::vector<int64_t>{0, 1, 5, 6, 2, 3, 7, 8, 4, 9, 10, 11, 12, 13, 14}));
    EXPECT_EQ(w.ends, (std::vector<int64_t>{4, 8, 10, 12, 14, 15}));
}

TEST(QwenVisionSize, AsTheReferenceSizesAnEditImage) {
    using Size = std::pair<int64_t, int64_t>;
    EXPECT_EQ(qwen25_vision_size(512, 512), (Size{504, 504}));   // rounded, inside the range
    EXPECT_EQ(qwen25_vision_size(1024, 768), (Size{644, 476}));  // over 560 x 560: floored
    EXPECT_EQ(qwen25_vision_size(100, 100), (Size{392, 392}));   // under 384 x 384: ceiled
    EXPECT_EQ(qwen25_vision_size(10, 1000), (Size{56, 3864}));   // under, one short side
    EXPECT_EQ(qwen25_vision_size(300, 200, 28, 256 * 256, 256 * 256), (Size{308, 196}));
    EXPECT_THROW(qwen25_vision_size(0, 10), Error);
}

TEST(QwenVisionPreprocess, ScalesCropsAndNormalisesAsClip) {
    // 2 x 4 px to 4 x 4: scaled by 2 (nearest) to 4 x 8, the middle 4 columns kept.
    std::vector<float> v(24);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) / 24.0f;
    v[0] = 1.5f;  // clamped to 1
    const Tensor out = qwen25_vision_preprocess(Tensor::from_vector({1, 3, 2, 4}, v), 4, 4);
    ASSERT_EQ(out.shape(), (Shape{1, 3, 4, 4}));
    const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    const float stdev[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    const std::vector<float> got = out.to_vector();
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x) {
                const float src = std::min(1.0f, v[(c * 2 + y / 2) * 4 + (x + 2) / 2]);
                EXPECT_NEAR(got[(c * 4 + y) * 4 + x], (src - mean[c]) / stdev[c], 1e-5)
                    << c << " " << y << " " << x;
            }
    EXPECT_THROW(qwen25_vision_preprocess(test::random_tensor({1, 4, 8, 8}, 1), 4, 4), Error);
    EXPECT_THROW(qwen25_vision_preprocess(test::random_tensor({1, 3, 8, 8}, 1), 0, 4), Error);
}

TEST_F(QwenVisionTest, RefusesImagesItCannotPatch) {
    const Qwen25VisionModel tower = load_tower(*model_, tiny_options());
    const std::string odd = test::error_of([&] {
        tower.forward(test::random_tensor({1, 3, 50, 84}, 1));
    });
    EXPECT_NE(odd.find("50 x 84"), std::string::npos) << odd;
    EXPECT_NE(odd.find("multiples of 28"), std::string::npos) << odd;
    EXPECT_THROW(tower.forward(test::random_tensor({1, 4, 56, 56}, 2)), Error);
    EXPECT_THROW(tower.forward(test::random_tensor({3, 56, 56}, 3)), Error);
    EXPECT_THROW(tower.forward(Tensor()), Error);
}

TEST_F(QwenVisionTest, RefusesOptionsTheWeightsCannotTake) {
    VisionOptions o = tiny_options();
    o.heads = 3;  // 64 is no multiple of 3
    EXPECT_THROW(load_tower(*model_, o), Error);
    o = tiny_options();
    o.window_size = 100;  // not whole merge units
    EXPECT_THROW(load_tower(*model_, o), Error);
}

TEST(QwenVisionLoad, NamesAMissingTensor) {
    Params p = tiny_tower();
    p.erase("visual.blocks.1.mlp.up_proj.weight");
    const std::string path =
        test::write_f32_safetensors(p, "qwen_vision_missing_" + std::to_string(::getpid()));
    const std::string e = test::error_of([&] { load_tower(path, tiny_options()); });
    std::remove(path.c_str());
    EXPECT_NE(e.find("visual.blocks.1.mlp.up_proj.weight"), std::string::npos) << e;
    ModelFiles none;
    const std::string empty = test::error_of(
        [&] { Qwen25VisionModel::load(Weights(none, "text_encoders.llm.visual.")); });
    EXPECT_NE(empty.find("patch_embed.proj.weight"), std::string::npos) << empty;
}

// The real Qwen2.5-VL-7B layout (the fixture's 2-block tower at full width, a sparse file):
// every tensor bound with its checkpoint shape, the 7B's shape read, an image run.
TEST(QwenVisionLayout, TheFixtureTowerLoadsAndRuns) {
    const std::string path =
        testing::TempDir() + "/qwen_vision_7b_" + std::to_string(::getpid()) + ".safetensors";
    test::run_or_fail("/usr/bin/python3 " + std::string(SD_TESTS_SOURCE_DIR) +
                      "/tools/write_sparse_checkpoint.py " + test::fixtures_dir() +
                      "/manifests/qwen2_5_vl_7b_l2_vis2.tsv " + path);
    {
        const Qwen25VisionModel tower = load_tower(path, {});
        const VisionConfig& c = tower.config();
        EXPECT_EQ(c.width, 1280);
        EXPECT_EQ(c.depth, 2);
        EXPECT_EQ(c.heads, 16);
        EXPECT_EQ(c.ffn, 3420);
        EXPECT_EQ(c.out_width, 3584);
        EXPECT_EQ(c.merge, 2);
        EXPECT_TRUE(c.fullatt_blocks.empty());
        const Tensor out = tower.forward(test::random_tensor({1, 3, 56, 84}, 5));
        EXPECT_EQ(out.shape(), (Shape{1, 6, 3584}));
        for (float v : out.to_vector()) ASSERT_TRUE(std::isfinite(v));
    }
    std::remove(path.c_str());
}

}  // namespace
}  // namespace sd
