// Chroma-Radiance: the NeRF embedder's position code (hand values of the reference's
// fetch_dct_pos), the configuration read from the weights, and a tiny random model (1 double +
// 1 single block of width 128, a NeRF head of width 16 with 2 blocks) with and without its
// text mask, on an image that is not whole patches, and in its x0 and 32x32 variants, against
// the independent numpy implementation in chroma_radiance_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/chroma_radiance.h"
#include "test_util.h"
#include "tiny_flux.h"

namespace sd {
namespace {

using test::Params;

// chroma_radiance_reference.py's velocity for `model` and `in`.
Tensor numpy_output(const std::string& model, const Params& in, const std::string& name) {
    const std::string inputs = test::write_f32_safetensors(in, name + "_inputs");
    const std::string out_path = test::temp_path(name + "_out.f32");
    const std::string cmd = "/usr/bin/python3 " + test::tests_source_dir() +
                            "/models/chroma_radiance_reference.py " + model + " " + inputs + " " +
                            out_path;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const Shape shape = in.at("x").shape();
    std::vector<float> want(static_cast<size_t>(shape.numel()));
    std::ifstream f(out_path, std::ios::binary);
    f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
    EXPECT_TRUE(f.good()) << out_path;
    return Tensor::from_vector(shape, want);
}

struct Loaded {
    std::string path;
    ModelFiles files;
    ChromaRadianceModel model;
};

std::unique_ptr<Loaded> load(const Params& p, const std::string& name) {
    auto l = std::make_unique<Loaded>();
    l->path = test::write_f32_safetensors(p, name);
    l->files.add(l->path, ModelRole::DiffusionModel);
    l->model = ChromaRadianceModel::load(Weights(l->files, "model.diffusion_model."));
    return l;
}

Params inputs(int64_t H, int64_t W, uint32_t seed) {
    Params in;
    in["x"] = test::random_tensor({1, 3, H, W}, seed);
    in["t"] = Tensor::from_vector({1}, {0.6f});
    in["context"] = test::random_tensor({1, 5, 32}, seed + 1);
    return in;
}

TEST(ChromaRadiance, PositionCodeIsTheReferencesCosines) {
    const Tensor code = nerf_position_code(16, 4);
    ASSERT_EQ(code.shape(), (Shape{256, 16}));
    const std::vector<float> v = code.to_vector();
    for (int u = 0; u < 4; ++u) {
        for (int w = 0; w < 4; ++w) {
            const float c = 1.0f / (1.0f + static_cast<float>(u * w));
            // Pixel (0, 0): both cosines 1. Pixel (15, 15) at (1, 1): (-1)^(u + w).
            EXPECT_NEAR(v[u * 4 + w], c, 1e-6) << u << " " << w;
            EXPECT_NEAR(v[255 * 16 + u * 4 + w], ((u + w) % 2 ? -c : c), 1e-6) << u << " " << w;
        }
    }
    // Pixel (row 0, column 5): x = 5 / 15 moves the u cosine alone.
    EXPECT_NEAR(v[5 * 16 + 2 * 4 + 0], std::cos(5.0f / 15.0f * 2.0f * 3.14159265f), 1e-6);
    EXPECT_NEAR(v[5 * 16 + 0 * 4 + 3], 1.0f, 1e-6);
}

TEST(ChromaRadiance, ConfigurationIsReadFromTheWeights) {
    auto plain = load(test::tiny_chroma_radiance(1, 1, 2), "radiance_config");
    const ChromaRadianceConfig& c = plain->model.config();
    EXPECT_EQ(c.channels, 3);
    EXPECT_EQ(c.patch, 16);
    EXPECT_EQ(c.nerf_hidden, 16);
    EXPECT_EQ(c.nerf_mlp_ratio, 2);
    EXPECT_EQ(c.max_freqs, 4);
    EXPECT_FALSE(c.x0);
    EXPECT_TRUE(plain->model.transformer().config().chroma);
    auto variants = load(test::tiny_chroma_radiance(1, 1, 2, true, true), "radiance_variants");
    EXPECT_TRUE(variants->model.config().x0);
    EXPECT_EQ(variants->model.config().patch, 32);
}

TEST(ChromaRadiance, TinyModelMatchesNumpyWithAndWithoutMask) {
    auto l = load(test::tiny_chroma_radiance(1, 1, 2), "radiance_tiny");
    Params in = inputs(32, 48, 21);  // 2 x 3 patches
    const Tensor plain = l->model.forward(in.at("x"), in.at("t"), in.at("context"));
    test::expect_close(plain, numpy_output(l->path, in, "radiance_tiny"), 2e-4, 2e-4, "no mask");
    const Tensor mask = Tensor::from_vector({5}, {0.0f, -INFINITY, 0.0f, 0.0f, -INFINITY});
    in["mask"] = mask;
    const Tensor masked = l->model.forward(in.at("x"), in.at("t"), in.at("context"), mask);
    test::expect_close(masked, numpy_output(l->path, in, "radiance_tiny_mask"), 2e-4, 2e-4, "mask");
}

TEST(ChromaRadiance, ImageOfPartPatchesIsPaddedAndCropped) {
    auto l = load(test::tiny_chroma_radiance(1, 1, 1), "radiance_pad");
    const Params in = inputs(20, 36, 31);  // padded to 32 x 48
    const Tensor got = l->model.forward(in.at("x"), in.at("t"), in.at("context"));
    EXPECT_EQ(got.shape(), (Shape{1, 3, 20, 36}));
    test::expect_close(got, numpy_output(l->path, in, "radiance_pad"), 2e-4, 2e-4, "padded");
}

TEST(ChromaRadiance, X0And32x32VariantsMatchNumpy) {
    auto x0 = load(test::tiny_chroma_radiance(1, 1, 2, true, false), "radiance_x0");
    const Params a = inputs(32, 32, 41);
    test::expect_close(x0->model.forward(a.at("x"), a.at("t"), a.at("context")),
                       numpy_output(x0->path, a, "radiance_x0"), 2e-4, 2e-4, "x0");
    auto big = load(test::tiny_chroma_radiance(1, 1, 2, false, true), "radiance_32");
    const Params b = inputs(64, 96, 51);  // 2 x 3 patches of 32
    test::expect_close(big->model.forward(b.at("x"), b.at("t"), b.at("context")),
                       numpy_output(big->path, b, "radiance_32"), 2e-4, 2e-4, "32x32");
}

TEST(ChromaRadiance, MisshapenHeadIsNamed) {
    Params p = test::tiny_chroma_radiance(1, 1, 1);
    // 3 pixel channels and 15 codes: not a square number of frequencies.
    p["nerf_image_embedder.embedder.0.weight"] = test::random_tensor({16, 18}, 1);
    std::string error;
    try {
        load(p, "radiance_bad");
    } catch (const Error& e) {
        error = e.what();
    }
    EXPECT_NE(error.find("nerf_image_embedder.embedder.0.weight"), std::string::npos) << error;
    EXPECT_NE(error.find("square number"), std::string::npos) << error;
    Params q = test::tiny_chroma_radiance(1, 1, 1);
    q.erase("nerf_final_layer_conv.conv.weight");
    error.clear();
    try {
        load(q, "radiance_missing");
    } catch (const Error& e) {
        error = e.what();
    }
    EXPECT_NE(error.find("nerf_final_layer_conv.conv.weight"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
