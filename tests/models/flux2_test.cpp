// FLUX.2: the token positions against values by hand, a tiny random FLUX.2 (1 double + 1
// single block with the shared modulations, width 128, SiLU-gated MLPs, no biases) against the
// independent numpy forward in flux2_reference.py (also with reference latents, and dev's
// guidance embedding), the
// configuration read from the weights, and inputs or tensors that do not fit named.
#include "models/flux2.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/numpy_reference.h"
#include "models/tiny_flux2.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;
constexpr int64_t kWidth = 128, kMlp = 96, kContext = 24, kChannels = 8;

// A FLUX.2 of width 128 (one head of 128), gated MLP 96, text width 24, 8 latent channels.
Params tiny_flux2(int depth, int single) {
    return test::tiny_flux2(depth, single, {kChannels, kContext, false});
}

Flux2Model load_flux2(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return Flux2Model::load(Weights(files, "model.diffusion_model."));
}

// The numpy forward of `model` on `in` (flux2_reference.py), shaped like in["x"].
Tensor numpy_forward(const std::string& model, const Params& in, const std::string& name) {
    return test::numpy_reference("flux2_reference.py", model, in, in.at("x").shape(), name);
}

Params tiny_inputs() {
    Params in;
    in["x"] = test::random_tensor({1, kChannels, 3, 4}, 31);
    in["t"] = Tensor::from_vector({1}, {0.6f});
    in["context"] = test::random_tensor({1, 5, kContext}, 32);
    return in;
}

TEST(Flux2Positions, TextOnTheLastAxisImageAndReferencesOnTheGrid) {
    // 2 text tokens, a 1x2 image, a 2x1 reference at index 10.
    const std::vector<float> ids = flux2_positions(2, 1, 2, {{2, 1}}, 10.0f);
    const std::vector<float> want = {0,  0, 0, 0, 0,  0, 0, 1,   // text
                                     0,  0, 0, 0, 0,  0, 1, 0,   // image
                                     10, 0, 0, 0, 10, 1, 0, 0};  // reference
    EXPECT_EQ(ids, want);
    // A second reference is numbered on: index 20.
    const std::vector<float> two = flux2_positions(0, 0, 0, {{1, 1}, {1, 1}}, 10.0f);
    EXPECT_EQ(two, (std::vector<float>{10, 0, 0, 0, 20, 0, 0, 0}));
}

TEST(Flux2Model, ConfigurationComesFromTheWeights) {
    const Flux2Model m = load_flux2(test::write_f32_safetensors(tiny_flux2(2, 3), "flux2_cfg"));
    EXPECT_EQ(m.config().depth, 2);
    EXPECT_EQ(m.config().depth_single, 3);
    EXPECT_EQ(m.config().heads, 1);
    EXPECT_EQ(m.config().mlp_hidden, kMlp);
    EXPECT_EQ(m.config().context_dim, kContext);
    EXPECT_EQ(m.config().in_channels, kChannels);
    EXPECT_FALSE(m.config().guidance_embed);
}

TEST(Flux2Model, TinyModelMatchesNumpy) {
    const std::string model = test::write_f32_safetensors(tiny_flux2(1, 1), "flux2_tiny");
    const Flux2Model m = load_flux2(model);
    const Params in = tiny_inputs();
    const Tensor got = m.forward(in.at("x"), in.at("t"), in.at("context"), 0.0f);
    test::expect_close(got, numpy_forward(model, in, "flux2_tiny"), 2e-4, 2e-4, "FLUX.2");
}

// FLUX.2-dev's form: the distilled guidance embedded as the timestep is (guidance_in) and
// added to the time vector of every shared modulation.
TEST(Flux2Model, GuidanceEmbeddingOfDevMatchesNumpy) {
    const Params p = test::tiny_flux2(1, 2, {kChannels, kContext, true});
    const std::string model = test::write_f32_safetensors(p, "flux2_tiny_dev");
    const Flux2Model m = load_flux2(model);
    EXPECT_TRUE(m.config().guidance_embed);
    Params in = tiny_inputs();
    in["guidance"] = Tensor::from_vector({1}, {3.5f});
    const Tensor got = m.forward(in.at("x"), in.at("t"), in.at("context"), 3.5f);
    test::expect_close(got, numpy_forward(model, in, "flux2_tiny_dev"), 1e-4, 1e-4, "dev");
    // The guidance moves the output (it is not ignored).
    const Tensor other = m.forward(in.at("x"), in.at("t"), in.at("context"), 1.0f);
    EXPECT_GT(test::compare(got, other).max_abs, 1e-3);
}

TEST(Flux2Model, ReferenceTokensMatchNumpy) {
    const std::string model = test::write_f32_safetensors(tiny_flux2(1, 1), "flux2_tiny_refs");
    const Flux2Model m = load_flux2(model);
    Params in = tiny_inputs();
    const std::vector<Tensor> refs = {test::random_tensor({1, kChannels, 2, 3}, 41),
                                      test::random_tensor({1, kChannels, 3, 2}, 42)};
    in["ref0"] = refs[0];
    in["ref1"] = refs[1];
    const Tensor got = m.forward(in.at("x"), in.at("t"), in.at("context"), 0.0f, refs);
    test::expect_close(got, numpy_forward(model, in, "flux2_tiny_refs"), 2e-4, 2e-4, "refs");
}

TEST(Flux2Model, InputsThatDoNotFitAreErrors) {
    const Flux2Model m = load_flux2(test::write_f32_safetensors(tiny_flux2(1, 1), "flux2_fit"));
    const Tensor t = Tensor::full({1}, 0.5f);
    EXPECT_THROW(m.forward(Tensor::zeros({1, 4, 2, 2}), t, Tensor::zeros({1, 3, kContext}), 0.0f),
                 Error);
    EXPECT_THROW(m.forward(Tensor::zeros({1, kChannels, 2, 2}), t, Tensor::zeros({1, 3, 7}), 0.0f),
                 Error);
    EXPECT_THROW(m.forward(Tensor::zeros({1, kChannels, 2, 2}), t, Tensor::zeros({1, 3, kContext}),
                           0.0f, {Tensor::zeros({1, 3, 2, 2})}),
                 Error);
}

TEST(Flux2Model, MisShapedTensorIsNamed) {
    Params p = tiny_flux2(1, 1);
    p["double_blocks.0.txt_mlp.2.weight"] = Tensor::zeros({kWidth, 64});
    const std::string path = test::write_f32_safetensors(p, "flux2_bad");
    const std::string error = test::error_of([&] { load_flux2(path); });
    EXPECT_NE(error.find("double_blocks.0.txt_mlp.2.weight"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
