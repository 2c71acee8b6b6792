// SD3 / SD3.5 MMDiT: tiny random models (SD3's plain blocks; SD3.5's RMS qk-norm and MMDiT-X
// dual attention) against the independent numpy implementation in mmdit_reference.py, skipped
// blocks (skip-layer guidance), the configuration read from the weights, and a qk-norm tensor
// of the wrong shape named.
#include "models/mmdit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;

// An MMDiT of width 128 (`depth` heads of 128 / depth), MLP 256, 4 latent channels, a 6x6
// position grid, text width 32, pooled width 16; `qk_norm` adds ln_q / ln_k, `dual` blocks
// get x_block.attn2 (MMDiT-X).
Params tiny_mmdit(int depth, bool qk_norm, int dual) {
    Params p;
    uint32_t seed = 300;
    const int64_t C = 128, mlp = 256, D = C / depth;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = test::random_tensor({out, in}, seed++, -bound, bound);
        p[name + ".bias"] = test::random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    auto attention = [&](const std::string& name, bool proj) {
        linear(name + ".qkv", C, 3 * C);
        if (proj) linear(name + ".proj", C, C);
        if (qk_norm) {
            p[name + ".ln_q.weight"] = test::random_tensor({D}, seed++, 0.5f, 1.5f);
            p[name + ".ln_k.weight"] = test::random_tensor({D}, seed++, 0.5f, 1.5f);
        }
    };
    auto stream = [&](const std::string& name, bool pre_only, bool attn2) {
        linear(name + ".adaLN_modulation.1", C, (pre_only ? 2 : attn2 ? 9 : 6) * C);
        attention(name + ".attn", !pre_only);
        if (attn2) attention(name + ".attn2", true);
        if (!pre_only) {
            linear(name + ".mlp.fc1", C, mlp);
            linear(name + ".mlp.fc2", mlp, C);
        }
    };
    p["x_embedder.proj.weight"] = test::random_tensor({C, 4, 2, 2}, seed++, -0.5f, 0.5f);
    p["x_embedder.proj.bias"] = test::random_tensor({C}, seed++, -0.1f, 0.1f);
    p["pos_embed"] = test::random_tensor({1, 36, C}, seed++, -0.5f, 0.5f);
    linear("t_embedder.mlp.0", 256, C);
    linear("t_embedder.mlp.2", C, C);
    linear("y_embedder.mlp.0", 16, C);
    linear("y_embedder.mlp.2", C, C);
    linear("context_embedder", 32, C);
    for (int i = 0; i < depth; ++i) {
        const std::string b = "joint_blocks." + std::to_string(i) + ".";
        stream(b + "context_block", i == depth - 1, false);
        stream(b + "x_block", false, i < dual);
    }
    linear("final_layer.adaLN_modulation.1", C, 2 * C);
    linear("final_layer.linear", C, 4 * 4);
    return p;
}

MMDiT load_mmdit(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return MMDiT::load(Weights(files, "model.diffusion_model."));
}

struct Inputs {
    Params values;
    std::string path;
};

Inputs tiny_inputs() {
    Inputs in;
    in.values["x"] = test::random_tensor({1, 4, 6, 8}, 31);  // 3x4 patches of the 6x6 grid
    in.values["t"] = Tensor::from_vector({1}, {730.0f});
    in.values["context"] = test::random_tensor({1, 5, 32}, 32);
    in.values["y"] = test::random_tensor({1, 16}, 33);
    in.path = test::write_f32_safetensors(in.values, "mmdit_tiny_inputs");
    return in;
}

// mmdit_reference.py's prediction for `model` on `in`, without the blocks in `skip`.
Tensor numpy_forward(const std::string& model, const Inputs& in, const std::string& skip = "") {
    const std::string out_path = test::temp_path("mmdit_tiny_out.f32");
    const std::string cmd = "cd " + test::tests_source_dir() +
                            "/models && /usr/bin/python3 mmdit_reference.py " + model + " " +
                            in.path + " " + out_path + (skip.empty() ? "" : " " + skip);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(out_path, std::ios::binary);
    std::vector<float> want(4 * 6 * 8);
    f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
    EXPECT_TRUE(f.good()) << out_path;
    std::remove(out_path.c_str());
    return Tensor::from_vector({1, 4, 6, 8}, want);
}

Tensor run(const MMDiT& m, const Inputs& in, const std::vector<int>& skip = {}) {
    const Params& v = in.values;
    return m.forward(v.at("x"), v.at("t"), v.at("context"), v.at("y"), skip);
}

TEST(MMDiT, Sd3BlocksMatchNumpy) {
    const std::string model = test::write_f32_safetensors(tiny_mmdit(2, false, 0), "mmdit_sd3");
    const MMDiT m = load_mmdit(model);
    EXPECT_EQ(m.config().depth, 2);
    EXPECT_EQ(m.config().heads, 2);
    EXPECT_EQ(m.config().head_dim, 64);
    EXPECT_EQ(m.config().pos_embed_max, 6);
    EXPECT_EQ(m.config().in_channels, 4);
    EXPECT_EQ(m.config().context_dim, 32);
    EXPECT_EQ(m.config().adm_dim, 16);
    EXPECT_FALSE(m.config().qk_norm);
    EXPECT_EQ(m.config().dual_attention_blocks, 0);
    const Inputs in = tiny_inputs();
    test::expect_close(run(m, in), numpy_forward(model, in), 2e-4, 2e-4, "SD3 MMDiT");
}

// SD3.5 medium's pieces: RMS qk-norm on every attention and MMDiT-X's second self-attention
// of the image tokens in the first block.
TEST(MMDiT, QkNormAndDualAttentionMatchNumpy) {
    const std::string model = test::write_f32_safetensors(tiny_mmdit(2, true, 1), "mmdit_sd35m");
    const MMDiT m = load_mmdit(model);
    EXPECT_TRUE(m.config().qk_norm);
    EXPECT_EQ(m.config().dual_attention_blocks, 1);
    const Inputs in = tiny_inputs();
    test::expect_close(run(m, in), numpy_forward(model, in), 2e-4, 2e-4, "SD3.5 MMDiT-X");
}

TEST(MMDiT, SkippedBlocksMatchNumpy) {
    const std::string model = test::write_f32_safetensors(tiny_mmdit(4, true, 0), "mmdit_skip");
    const MMDiT m = load_mmdit(model);
    const Inputs in = tiny_inputs();
    const Tensor skipped = run(m, in, {1});
    test::expect_close(skipped, numpy_forward(model, in, "1"), 2e-4, 2e-4, "block 1 skipped");
    const std::vector<float> a = skipped.to_vector(), b = run(m, in).to_vector();
    float diff = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
    EXPECT_GT(diff, 1e-3f) << "skipping a block changed nothing";
}

TEST(MMDiT, WrongQkNormShapeIsNamed) {
    Params p = tiny_mmdit(2, true, 0);
    p["joint_blocks.1.x_block.attn.ln_k.weight"] = Tensor::zeros({32});
    const std::string model = test::write_f32_safetensors(p, "mmdit_bad_ln");
    try {
        load_mmdit(model);
        FAIL() << "loaded a mis-shaped ln_k";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("joint_blocks.1.x_block.attn.ln_k.weight"),
                  std::string::npos)
            << e.what();
    }
}

TEST(MMDiT, InputsThatDoNotFitAreErrors) {
    const MMDiT m = load_mmdit(test::write_f32_safetensors(tiny_mmdit(2, false, 0), "mmdit_in"));
    const Tensor t = Tensor::full({1}, 500.0f), ctx = Tensor::zeros({1, 3, 32}),
                 y = Tensor::zeros({1, 16});
    EXPECT_THROW(m.forward(Tensor::zeros({1, 3, 4, 4}), t, ctx, y), Error);   // channels
    EXPECT_THROW(m.forward(Tensor::zeros({1, 4, 5, 4}), t, ctx, y), Error);   // odd height
    EXPECT_THROW(m.forward(Tensor::zeros({1, 4, 14, 4}), t, ctx, y), Error);  // past the grid
    EXPECT_THROW(m.forward(Tensor::zeros({1, 4, 4, 4}), t, Tensor::zeros({1, 3, 8}), y), Error);
    EXPECT_THROW(m.forward(Tensor::zeros({1, 4, 4, 4}), t, ctx, Tensor::zeros({1, 8})), Error);
}

}  // namespace
}  // namespace sd
