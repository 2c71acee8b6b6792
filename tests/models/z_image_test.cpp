// Z-Image's DiT: token positions and the channels-last patch layout against values worked out
// by hand, a tiny random model (width 128, one head) run end to end with its padding tokens,
// its configuration read from the weights, and a mis-shaped tensor named. The network's
// numerics are checked against the reference program's image (reference/zimage/).
#include "models/z_image.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/error.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;

TEST(ZImagePositions, TextThenImageThenPadding) {
    // 2 text tokens, a 2x3 patch grid, 2 padding tokens.
    const std::vector<float> ids = z_image_positions(2, 2, 3, 2);
    const std::vector<float> want = {1, 0, 0, 2, 0, 0,                                      // text
                                     3, 0, 0, 3, 0, 1, 3, 0, 2, 3, 1, 0, 3, 1, 1, 3, 1, 2,  // image
                                     0, 0, 0, 0, 0, 0};  // padding
    EXPECT_EQ(ids, want);
}

TEST(ZImagePatches, ChannelsLastAndBack) {
    // x[c][y][x] = 100 c + 10 y + x, 2 channels, 4x4, patch 2.
    std::vector<float> v;
    for (int c = 0; c < 2; ++c)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x) v.push_back(100.0f * c + 10.0f * y + x);
    const Tensor x = Tensor::from_vector({1, 2, 4, 4}, v);
    const Tensor p = patchify(x, 2, PatchLayout::ChannelsLast);
    ASSERT_EQ(p.shape(), (Shape{1, 4, 8}));
    // Token 1 = patch row 0, column 1; features (py, px, c) with c fastest.
    const std::vector<float> got = p.narrow(1, 1, 1).contiguous().to_vector();
    EXPECT_EQ(got, (std::vector<float>{2, 102, 3, 103, 12, 112, 13, 113}));
    EXPECT_EQ(unpatchify(p, 2, 4, 4, 2, PatchLayout::ChannelsLast).to_vector(), v);
}

// Width 128 (one head of 128), FFN 256, text width 32, adaLN 256, `layers` main layers and one
// refiner layer each side.
Params tiny_z_image(int layers) {
    Params p;
    uint32_t seed = 300;
    const int64_t C = 128, ffn = 256, cap = 32, adaln = 256;
    auto weight = [&](const std::string& name, int64_t in, int64_t out, bool bias) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = test::random_tensor({out, in}, seed++, -bound, bound);
        if (bias) p[name + ".bias"] = test::random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    auto scale = [&](const std::string& name, int64_t n) {
        p[name + ".weight"] = test::random_tensor({n}, seed++, 0.5f, 1.5f);
    };
    auto block = [&](const std::string& b, bool modulated) {
        weight(b + "attention.qkv", C, 3 * C, false);
        weight(b + "attention.out", C, C, false);
        scale(b + "attention.q_norm", C);
        scale(b + "attention.k_norm", C);
        weight(b + "feed_forward.w1", C, ffn, false);
        weight(b + "feed_forward.w2", ffn, C, false);
        weight(b + "feed_forward.w3", C, ffn, false);
        for (const char* n : {"attention_norm1", "attention_norm2", "ffn_norm1", "ffn_norm2"})
            scale(b + n, C);
        if (modulated) weight(b + "adaLN_modulation.0", adaln, 4 * C, true);
    };
    weight("x_embedder", 64, C, true);
    scale("cap_embedder.0", cap);
    weight("cap_embedder.1", cap, C, true);
    p["cap_pad_token"] = test::random_tensor({1, C}, seed++, -1.0f, 1.0f);
    p["x_pad_token"] = test::random_tensor({1, C}, seed++, -1.0f, 1.0f);
    weight("t_embedder.mlp.0", 256, 512, true);
    weight("t_embedder.mlp.2", 512, adaln, true);
    block("noise_refiner.0.", true);
    block("context_refiner.0.", false);
    for (int i = 0; i < layers; ++i) block("layers." + std::to_string(i) + ".", true);
    weight("final_layer.adaLN_modulation.1", adaln, C, true);
    weight("final_layer.linear", C, 64, true);
    return p;
}

ZImageModel load_tiny(const Params& p, const std::string& name) {
    const std::string path = test::write_f32_safetensors(p, name);
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return ZImageModel::load(Weights(files, "model.diffusion_model."));
}

TEST(ZImageModel, ReadsItsShapeAndRunsWithPadding) {
    const ZImageModel m = load_tiny(tiny_z_image(2), "z_image_tiny");
    const ZImageConfig& c = m.config();
    EXPECT_EQ(c.hidden, 128);
    EXPECT_EQ(c.heads, 1);
    EXPECT_EQ(c.layers, 2);
    EXPECT_EQ(c.refiner_layers, 1);
    EXPECT_EQ(c.cap_dim, 32);
    EXPECT_EQ(c.in_channels, 16);
    // 5 text tokens and a 6x10 latent (3x5 patches): both sides padded to 32 tokens.
    const Tensor x = test::random_tensor({1, 16, 6, 10}, 1, -1.0f, 1.0f);
    const Tensor ctx = test::random_tensor({1, 5, 32}, 2, -1.0f, 1.0f);
    const Tensor v = m.forward(x, Tensor::full({1}, 700.0f), ctx);
    ASSERT_EQ(v.shape(), x.shape());
    for (float f : v.to_vector()) ASSERT_TRUE(std::isfinite(f));
    // Odd sizes are padded to whole patches and cropped back.
    const Tensor odd = test::random_tensor({1, 16, 5, 7}, 3, -1.0f, 1.0f);
    EXPECT_EQ(m.forward(odd, Tensor::full({1}, 700.0f), ctx).shape(), odd.shape());
    // The time reaches the output.
    EXPECT_NE(m.forward(x, Tensor::full({1}, 100.0f), ctx).to_vector(), v.to_vector());
}

TEST(ZImageModel, NamesAMisShapedTensor) {
    Params p = tiny_z_image(1);
    p["layers.0.feed_forward.w3.weight"] = test::random_tensor({255, 128}, 9, -0.1f, 0.1f);
    try {
        load_tiny(p, "z_image_bad");
        FAIL() << "loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("layers.0.feed_forward.w3.weight"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sd
