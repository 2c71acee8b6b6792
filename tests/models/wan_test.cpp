// Wan's DiT: token positions by hand, a tiny random model (width 256 = two 128-wide heads, 2
// blocks, text width 32, 4 latent channels) against an independent float64 numpy forward of
// the original Wan code (wan_reference.py) on a 2-frame latent, its configuration read from the
// weights, and an image-to-video file refused by name.
#include "models/wan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/error.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/numpy_reference.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;
constexpr int64_t kDim = 256, kFfn = 64, kText = 32, kChannels = 4;
constexpr int64_t kI2vIn = 9, kClip = 48;  // image-to-video: noise, mask, video latent; CLIP width

TEST(WanPositions, FrameRowColumnInTokenOrder) {
    EXPECT_EQ(wan_positions(2, 1, 2), (std::vector<float>{0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1}));
}

Params tiny_wan(int depth) {
    Params p;
    uint32_t seed = 700;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = test::random_tensor({out, in}, seed++, -bound, bound);
        p[name + ".bias"] = test::random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    auto scale = [&](const std::string& name, int64_t n) {
        p[name] = test::random_tensor({n}, seed++, 0.5f, 1.5f);
    };
    p["patch_embedding.weight"] =
        test::random_tensor({kDim, kChannels, 1, 2, 2}, seed++, -0.5f, 0.5f);
    p["patch_embedding.bias"] = test::random_tensor({kDim}, seed++, -0.1f, 0.1f);
    linear("text_embedding.0", kText, kDim);
    linear("text_embedding.2", kDim, kDim);
    linear("time_embedding.0", 256, kDim);
    linear("time_embedding.2", kDim, kDim);
    linear("time_projection.1", kDim, 6 * kDim);
    for (int i = 0; i < depth; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        for (const char* a : {"self_attn.", "cross_attn."}) {
            for (const char* n : {"q", "k", "v", "o"}) linear(b + a + n, kDim, kDim);
            scale(b + a + "norm_q.weight", kDim);
            scale(b + a + "norm_k.weight", kDim);
        }
        scale(b + "norm3.weight", kDim);
        p[b + "norm3.bias"] = test::random_tensor({kDim}, seed++, -0.1f, 0.1f);
        linear(b + "ffn.0", kDim, kFfn);
        linear(b + "ffn.2", kFfn, kDim);
        p[b + "modulation"] = test::random_tensor({1, 6, kDim}, seed++, -0.2f, 0.2f);
    }
    linear("head.head", kDim, 4 * kChannels);
    p["head.modulation"] = test::random_tensor({1, 2, kDim}, seed++, -0.2f, 0.2f);
    return p;
}

WanModel load_model(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return WanModel::load(Weights(files, "model.diffusion_model."));
}

TEST(WanModel, ConfigurationFromTheWeights) {
    const WanModel m = load_model(test::write_f32_safetensors(tiny_wan(3), "wan_config"));
    const WanConfig& c = m.config();
    EXPECT_EQ(c.layers, 3);
    EXPECT_EQ(c.dim, kDim);
    EXPECT_EQ(c.heads, 2);
    EXPECT_EQ(c.ffn, kFfn);
    EXPECT_EQ(c.text_dim, kText);
    EXPECT_EQ(c.in_channels, kChannels);
    EXPECT_EQ(c.out_channels, kChannels);
}

TEST(WanModel, MatchesNumpy) {
    const Params w = tiny_wan(2);
    const std::string path = test::write_f32_safetensors(w, "wan_tiny");
    const WanModel m = load_model(path);
    Params in;
    in["x"] = test::random_tensor({1, kChannels, 2, 4, 6}, 41);
    in["t"] = Tensor::from_vector({1}, {730.0f});
    in["context"] = test::random_tensor({1, 5, kText}, 42);
    const Tensor got = m.forward(in.at("x"), in.at("t"), in.at("context"));
    const Tensor want =
        test::numpy_reference("wan_reference.py", path, in, in.at("x").shape(), "wan_tiny");
    ASSERT_EQ(got.shape(), in.at("x").shape());
    const test::Diff d = test::compare(got, want, /*floor=*/1e-2);
    std::printf("max abs error vs numpy: %g\n", d.max_abs);
    EXPECT_LT(d.max_abs, 1e-4) << "worst element " << d.worst;
}

// Wan2.2 TI2V's kept first frame: each frame its own timestep (the first at 0), each frame's
// tokens modulated by its own.
TEST(WanModel, PerFrameTimestepsMatchNumpy) {
    const Params w = tiny_wan(2);
    const std::string path = test::write_f32_safetensors(w, "wan_tiny_frames");
    const WanModel m = load_model(path);
    Params in;
    in["x"] = test::random_tensor({1, kChannels, 3, 4, 2}, 43);
    in["t"] = Tensor::from_vector({3}, {0.0f, 730.0f, 730.0f});
    in["context"] = test::random_tensor({1, 4, kText}, 44);
    const Tensor got = m.forward(in.at("x"), in.at("t"), in.at("context"));
    const Tensor want =
        test::numpy_reference("wan_reference.py", path, in, in.at("x").shape(), "wan_tiny_frames");
    const test::Diff d = test::compare(got, want, /*floor=*/1e-2);
    std::printf("max abs error vs numpy: %g\n", d.max_abs);
    EXPECT_LT(d.max_abs, 1e-4) << "worst element " << d.worst;
    // Two timesteps for three frames name themselves.
    EXPECT_ERROR_CONTAINS(
        m.forward(in.at("x"), Tensor::from_vector({2}, {1.0f, 2.0f}), in.at("context")),
        "2 timesteps for 3 frames");
}

// Image-to-video: 36 input channels, the CLIP-vision states through img_emb, and every
// cross-attention's image keys and values; FLF2V's emb_pos on the two frames' states.
Params tiny_i2v(bool flf) {
    Params p = tiny_wan(2);
    uint32_t seed = 800;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = test::random_tensor({out, in}, seed++, -bound, bound);
        p[name + ".bias"] = test::random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    p["patch_embedding.weight"] = test::random_tensor({kDim, kI2vIn, 1, 2, 2}, seed++, -0.3f, 0.3f);
    for (int i = 0; i < 2; ++i) {
        const std::string c = "blocks." + std::to_string(i) + ".cross_attn.";
        linear(c + "k_img", kDim, kDim);
        linear(c + "v_img", kDim, kDim);
        p[c + "norm_k_img.weight"] = test::random_tensor({kDim}, seed++, 0.5f, 1.5f);
    }
    for (const char* n : {"img_emb.proj.0", "img_emb.proj.4"}) {
        const int64_t d = std::string(n) == "img_emb.proj.0" ? kClip : kDim;
        p[std::string(n) + ".weight"] = test::random_tensor({d}, seed++, 0.5f, 1.5f);
        p[std::string(n) + ".bias"] = test::random_tensor({d}, seed++, -0.1f, 0.1f);
    }
    linear("img_emb.proj.1", kClip, kClip);
    linear("img_emb.proj.3", kClip, kDim);
    if (flf) p["img_emb.emb_pos"] = test::random_tensor({1, 514, kClip}, seed++, -0.5f, 0.5f);
    return p;
}

void expect_i2v_matches_numpy(bool flf, int64_t clip_tokens) {
    const std::string name = flf ? "wan_flf2v" : "wan_i2v";
    const std::string path = test::write_f32_safetensors(tiny_i2v(flf), name);
    const WanModel m = load_model(path);
    EXPECT_TRUE(m.config().image_input);
    EXPECT_EQ(m.config().clip_dim, kClip);
    EXPECT_EQ(m.config().in_channels, kI2vIn);
    Params in;
    in["x"] = test::random_tensor({1, kI2vIn, 2, 4, 2}, 45);
    in["t"] = Tensor::from_vector({1}, {500.0f});
    in["context"] = test::random_tensor({1, 3, kText}, 46);
    in["clip"] = test::random_tensor({1, clip_tokens, kClip}, 47);
    const Tensor got = m.forward(in.at("x"), in.at("t"), in.at("context"), in.at("clip"));
    const Shape out_shape = {1, kChannels, 2, 4, 2};
    const Tensor want = test::numpy_reference("wan_reference.py", path, in, out_shape, name);
    ASSERT_EQ(got.shape(), out_shape);
    const test::Diff d = test::compare(got, want, /*floor=*/1e-2);
    std::printf("max abs error vs numpy: %g\n", d.max_abs);
    EXPECT_LT(d.max_abs, 1e-4) << "worst element " << d.worst;
    // Without the CLIP-vision states the model names what it needs.
    EXPECT_ERROR_CONTAINS(m.forward(in.at("x"), in.at("t"), in.at("context")), "--clip_vision");
}

TEST(WanModel, ImageToVideoMatchesNumpy) {
    expect_i2v_matches_numpy(/*flf=*/false, 257);
}

TEST(WanModel, FirstLastFrameToVideoMatchesNumpy) {
    expect_i2v_matches_numpy(/*flf=*/true, 514);
}

// VACE: two control blocks beside four main ones (after blocks 0 and 2), their hints times the
// strength; the numpy side computes every hint first, from the input tokens, as the original.
TEST(WanModel, VaceMatchesNumpy) {
    constexpr int64_t kVaceIn = 12;
    Params w = tiny_wan(4);
    const Params extra = tiny_wan(2);  // fresh block weights for the control blocks
    uint32_t seed = 900;
    for (int j = 0; j < 2; ++j)
        for (const auto& [name, value] : extra)
            if (name.rfind("blocks." + std::to_string(j) + ".", 0) == 0)
                w["vace_" + name] = test::random_tensor(value.shape(), seed++, -0.3f, 0.3f);
    for (const char* name :
         {"vace_blocks.0.before_proj", "vace_blocks.0.after_proj", "vace_blocks.1.after_proj"}) {
        w[std::string(name) + ".weight"] = test::random_tensor({kDim, kDim}, seed++, -0.06f, 0.06f);
        w[std::string(name) + ".bias"] = test::random_tensor({kDim}, seed++, -0.1f, 0.1f);
    }
    w["vace_patch_embedding.weight"] =
        test::random_tensor({kDim, kVaceIn, 1, 2, 2}, seed++, -0.3f, 0.3f);
    w["vace_patch_embedding.bias"] = test::random_tensor({kDim}, seed++, -0.1f, 0.1f);
    const std::string path = test::write_f32_safetensors(w, "wan_vace");
    const WanModel m = load_model(path);
    EXPECT_EQ(m.config().vace_in_channels, kVaceIn);
    EXPECT_EQ(m.config().vace_layers, 2);
    Params in;
    in["x"] = test::random_tensor({1, kChannels, 2, 4, 2}, 48);
    in["t"] = Tensor::from_vector({1}, {600.0f});
    in["context"] = test::random_tensor({1, 3, kText}, 49);
    in["vace"] = test::random_tensor({1, kVaceIn, 2, 4, 2}, 50);
    in["vace_strength"] = Tensor::from_vector({1}, {0.7f});
    const Tensor got =
        m.forward(in.at("x"), in.at("t"), in.at("context"), {}, {in.at("vace"), 0.7f});
    const Tensor want =
        test::numpy_reference("wan_reference.py", path, in, in.at("x").shape(), "wan_vace");
    const test::Diff d = test::compare(got, want, /*floor=*/1e-2);
    std::printf("max abs error vs numpy: %g\n", d.max_abs);
    EXPECT_LT(d.max_abs, 1e-4) << "worst element " << d.worst;
    // The hints count: strength 0 is the main stream alone, and differs.
    const Tensor plain =
        m.forward(in.at("x"), in.at("t"), in.at("context"), {}, {in.at("vace"), 0.0f});
    EXPECT_GT(test::compare(plain, want, 1e-2).max_abs, 1e-3);
    EXPECT_ERROR_CONTAINS(m.forward(in.at("x"), in.at("t"), in.at("context")),
                          "the control context is missing");
}

TEST(WanModel, AFourDimensionalLatentIsRefused) {
    const WanModel m = load_model(test::write_f32_safetensors(tiny_wan(1), "wan_4d"));
    EXPECT_ERROR_CONTAINS(
        m.forward(test::random_tensor({1, kChannels, 4, 4}, 1), Tensor::from_vector({1}, {1.0f}),
                  test::random_tensor({1, 3, kText}, 2)),
        "want [1, 4, T, H, W]");
}

}  // namespace
}  // namespace sd
