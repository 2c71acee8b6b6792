// Qwen-Image's DiT: token positions against values worked out by hand, a tiny random model
// (width 128 = one head of 128, 2 blocks, text width 32) against an independent float64 numpy
// forward (qwen_image_reference.py) with and without reference latents (fixed, increasing,
// decreasing), with Edit-2511's zero_cond_t and as Qwen-Image-Layered (frames, its
// addition_t_embedding), its configuration read from the weights, a mis-shaped tensor named,
// and the real layout's fixture loaded and run.
#include "models/qwen_image.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>

#include "base/error.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/numpy_reference.h"
#include "models/tiny_qwen_image.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;
constexpr int64_t kWidth = 128, kContext = 32, kChannels = 16;

TEST(QwenImagePositions, TextAfterTheCentredImage) {
    // 3 text tokens, a 2x3 patch grid: text at 1, 2, 3 (from max(h, w) / 2) on every axis;
    // rows -1, 0 and columns -1, 0, 1 (centred).
    const std::vector<float> ids = qwen_image_positions(3, 1, 2, 3, 2, {}, RefIndexMode::Fixed);
    const std::vector<float> want = {1, 1,  1,  2, 2,  2, 3, 3,  3,  // text
                                     0, -1, -1, 0, -1, 0, 0, -1, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1};
    EXPECT_EQ(ids, want);
    // One text token sits at max(h, w) / 2 = 1; an odd grid centres at h / 2 rounded down.
    EXPECT_EQ(qwen_image_positions(1, 1, 3, 1, 2, {}, RefIndexMode::Fixed),
              (std::vector<float>{1, 1, 1, 0, -1, 0, 0, 0, 0, 0, 1, 0}));
}

TEST(QwenImagePositions, ReferencesFixedOrIncreasing) {
    // A 1x1 patch image, no text. Fixed: references at index 1, not centred; the second (a
    // 2x2 latent) goes beside the first (a 4x2 latent: 2 rows, 1 column) as 2 + 4 > 2 + 2,
    // at dx = 2 (latent pixels).
    const std::vector<std::pair<int64_t, int64_t>> refs = {{4, 2}, {2, 2}};
    EXPECT_EQ(qwen_image_positions(0, 1, 1, 1, 2, refs, RefIndexMode::Fixed),
              (std::vector<float>{0, 0, 0, 1, 0, 0, 1, 1, 0, 1, 0, 2}));
    // Increase: indices 1, 2, each grid centred on the origin.
    EXPECT_EQ(qwen_image_positions(0, 1, 1, 1, 2, refs, RefIndexMode::Increase),
              (std::vector<float>{0, 0, 0, 1, -1, 0, 1, 0, 0, 2, 0, 0}));
}

TEST(QwenImagePositions, LayeredFramesThenReferencesCountingDown) {
    // Qwen-Image-Layered: 3 frames of a 1x2 grid, each frame its own index 0, 1, 2 (centred
    // columns -1, 0); Decrease numbers the references -1, -2, centred too.
    const std::vector<std::pair<int64_t, int64_t>> refs = {{2, 2}, {2, 4}};
    EXPECT_EQ(qwen_image_positions(0, 3, 1, 2, 2, refs, RefIndexMode::Decrease),
              (std::vector<float>{0,  0, -1, 0,  0, 0,     // frame 0
                                  1,  0, -1, 1,  0, 0,     // frame 1
                                  2,  0, -1, 2,  0, 0,     // frame 2
                                  -1, 0, 0,                // reference 1: one patch
                                  -2, 0, -1, -2, 0, 0}));  // reference 2: 1x2 patches
}

Params tiny_qwen_image(int depth, bool zero_cond_t, bool layered = false) {
    return test::tiny_qwen_image(depth, zero_cond_t, layered, kContext);
}

QwenImageModel load_model(const std::string& path, bool zero_cond_t = false) {
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return QwenImageModel::load(Weights(files, "model.diffusion_model."), zero_cond_t);
}

Params tiny_inputs() {
    Params in;
    in["x"] = test::random_tensor({1, kChannels, 6, 4}, 31);
    in["t"] = Tensor::from_vector({1}, {650.0f});
    in["context"] = test::random_tensor({1, 5, kContext}, 32);
    return in;
}

// Our forward and the numpy one on the same model and inputs; the largest difference.
float max_error(const Params& weights, Params in, const std::string& name) {
    const std::string path = test::write_f32_safetensors(weights, name);
    const QwenImageModel m = load_model(path);
    std::vector<Tensor> refs;
    for (int i = 0; in.count("ref" + std::to_string(i)); ++i)
        refs.push_back(in.at("ref" + std::to_string(i)));
    const int mode = in.count("ref_mode") ? static_cast<int>(in.at("ref_mode").to_vector()[0]) : 0;
    const RefIndexMode modes[] = {RefIndexMode::Fixed, RefIndexMode::Increase,
                                  RefIndexMode::Decrease};
    const Tensor got = m.forward(in.at("x"), in.at("t"), in.at("context"), refs, modes[mode]);
    const Tensor want =
        test::numpy_reference("qwen_image_reference.py", path, in, in.at("x").shape(), name);
    EXPECT_EQ(got.shape(), in.at("x").shape());
    float err = 0.0f;
    const std::vector<float> a = got.to_vector(), b = want.to_vector();
    for (size_t i = 0; i < a.size(); ++i) err = std::max(err, std::fabs(a[i] - b[i]));
    return err;
}

TEST(QwenImageModel, MatchesNumpy) {
    const float err = max_error(tiny_qwen_image(2, false), tiny_inputs(), "qwen_image_plain");
    std::printf("max abs error vs numpy (no references): %g\n", err);
    EXPECT_LT(err, 1e-4f);
}

TEST(QwenImageModel, MatchesNumpyWithReferences) {
    for (int mode = 0; mode < 3; ++mode) {  // fixed, increase, decrease
        Params in = tiny_inputs();
        in["ref0"] = test::random_tensor({1, kChannels, 4, 4}, 33);
        in["ref1"] = test::random_tensor({1, kChannels, 2, 6}, 34);
        in["ref_mode"] = Tensor::from_vector({1}, {static_cast<float>(mode)});
        const float err = max_error(tiny_qwen_image(2, false), in, "qwen_image_refs");
        std::printf("max abs error vs numpy (references, index mode %d): %g\n", mode, err);
        EXPECT_LT(err, 1e-4f) << "index mode " << mode;
    }
}

TEST(QwenImageModel, LayeredMatchesNumpy) {
    // Qwen-Image-Layered: 3 frames of an odd-sized latent, its addition_t_embedding, one
    // reference numbered -1 (the reference program's Decrease for this model).
    Params in = tiny_inputs();
    in["x"] = test::random_tensor({1, kChannels, 3, 5, 4}, 39);
    in["ref0"] = test::random_tensor({1, kChannels, 4, 6}, 40);
    in["ref_mode"] = Tensor::from_vector({1}, {2.0f});
    const Params weights = tiny_qwen_image(2, false, /*layered=*/true);
    const float err = max_error(weights, in, "qwen_image_layered");
    std::printf("max abs error vs numpy (layered): %g\n", err);
    EXPECT_LT(err, 1e-4f);
    const QwenImageModel m =
        load_model(test::write_f32_safetensors(weights, "qwen_image_layered_cfg"));
    EXPECT_TRUE(m.config().additional_t_cond);
}

TEST(QwenImageModel, MatchesNumpyWithZeroCondT) {
    Params in = tiny_inputs();
    in["ref0"] = test::random_tensor({1, kChannels, 4, 4}, 35);
    const float err = max_error(tiny_qwen_image(2, true), in, "qwen_image_zero_cond");
    std::printf("max abs error vs numpy (zero_cond_t): %g\n", err);
    EXPECT_LT(err, 1e-4f);
}

TEST(QwenImageModel, ZeroCondTChangesOnlyWithReferences) {
    const QwenImageModel plain =
        load_model(test::write_f32_safetensors(tiny_qwen_image(1, false), "qwen_image_zc0"));
    const QwenImageModel zero =
        load_model(test::write_f32_safetensors(tiny_qwen_image(1, true), "qwen_image_zc1"));
    EXPECT_FALSE(plain.config().zero_cond_t);
    EXPECT_TRUE(zero.config().zero_cond_t);
    const Params in = tiny_inputs();
    const Tensor ref = test::random_tensor({1, kChannels, 4, 4}, 36);
    auto run = [&](const QwenImageModel& m, const std::vector<Tensor>& refs) {
        return m.forward(in.at("x"), in.at("t"), in.at("context"), refs).to_vector();
    };
    EXPECT_EQ(run(plain, {}), run(zero, {}));
    EXPECT_NE(run(plain, {ref}), run(zero, {ref}));
    // The switch given at load (--model-args qwen_image_zero_cond_t=true) without the marker.
    const QwenImageModel forced =
        load_model(test::write_f32_safetensors(tiny_qwen_image(1, false), "qwen_image_zc2"), true);
    EXPECT_TRUE(forced.config().zero_cond_t);
    EXPECT_EQ(run(forced, {ref}), run(zero, {ref}));
}

TEST(QwenImageModel, ReadsItsShape) {
    const QwenImageModel m =
        load_model(test::write_f32_safetensors(tiny_qwen_image(3, false), "qwen_image_shape"));
    const QwenImageConfig& c = m.config();
    EXPECT_EQ(c.hidden, 128);
    EXPECT_EQ(c.heads, 1);
    EXPECT_EQ(c.head_dim, 128);
    EXPECT_EQ(c.depth, 3);
    EXPECT_EQ(c.context_dim, 32);
    EXPECT_EQ(c.mlp_hidden, 512);
    EXPECT_EQ(c.in_channels, 16);
    EXPECT_EQ(c.out_channels, 16);
    // Odd sizes are padded to whole patches and cropped back.
    const Tensor odd = test::random_tensor({1, kChannels, 5, 3}, 37);
    const Tensor ctx = test::random_tensor({1, 4, kContext}, 38);
    EXPECT_EQ(m.forward(odd, Tensor::full({1}, 500.0f), ctx).shape(), odd.shape());
}

TEST(QwenImageModel, NamesAMisShapedTensor) {
    Params p = tiny_qwen_image(1, false);
    p["transformer_blocks.0.attn.to_add_out.weight"] =
        test::random_tensor({kWidth, 127}, 9, -0.1f, 0.1f);
    try {
        load_model(test::write_f32_safetensors(p, "qwen_image_bad"));
        FAIL() << "loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("transformer_blocks.0.attn.to_add_out.weight"),
                  std::string::npos)
            << e.what();
    }
}

// The real Qwen-Image layout (the fixture made from its manifest, 2 of its 60 blocks): every
// tensor bound with its checkpoint shape, the widths read as Qwen-Image's, one forward run.
TEST(QwenImageLayout, TheRealFileLoadsAndRuns) {
    const QwenImageModel m =
        load_model(test::fixture_file("qwen_image/qwen_image_d2_bf16_seed40.safetensors"));
    const QwenImageConfig& c = m.config();
    EXPECT_EQ(c.hidden, 3072);
    EXPECT_EQ(c.heads, 24);
    EXPECT_EQ(c.depth, 2);
    EXPECT_EQ(c.context_dim, 3584);
    EXPECT_EQ(c.in_channels, 16);
    const Tensor x = test::random_tensor({1, 16, 32, 32}, 41);
    const Tensor ctx = test::random_tensor({1, 12, 3584}, 42);
    for (const char* run : {"first (weights paged in)", "second"}) {
        const auto start = std::chrono::steady_clock::now();
        const Tensor v = m.forward(x, Tensor::full({1}, 900.0f), ctx);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("Qwen-Image d2 forward at 32x32 latent, 12 text tokens, %s: %.2f s\n", run, s);
        ASSERT_EQ(v.shape(), x.shape());
        for (float f : v.to_vector()) ASSERT_TRUE(std::isfinite(f));
    }
}

}  // namespace
}  // namespace sd
