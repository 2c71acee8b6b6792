// FLUX.1: the RoPE table against values worked out by hand, attention with RoPE fused into
// its loads against the reference kernel on rotated copies, a tiny random FLUX (1 double +
// 1 single block, width 128) against the independent numpy implementation in
// flux_reference.py (also with Kontext reference latents in each index mode, and with Fill's and
// Canny / Depth's extra input channels), dev / schnell
// read from the weights, and a mis-shaped tensor named.
#include "models/flux.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/numpy_reference.h"
#include "nn/rope.h"
#include "test_util.h"
#include "tiny_flux.h"

namespace sd {
namespace {

using test::Params;
using test::tiny_flux;

std::string write_params(const Params& p, const std::string& name) {
    return test::write_f32_safetensors(p, name);
}

FluxModel load_flux(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return FluxModel::load(Weights(files, "model.diffusion_model."));
}

TEST(FluxRope, TableMatchesHandValues) {
    // Axes of width 2 and 4, theta 100: frequencies 1 | 1, 100^-0.5 = 0.1.
    const Tensor t = rope_table({0.0f, 0.0f, 2.0f, 3.0f}, {2, 4}, 100.0f);
    ASSERT_EQ(t.shape(), (Shape{2, 3, 2}));
    const std::vector<float> v = t.to_vector();
    const float want[2][3] = {{0.0f, 0.0f, 0.0f}, {2.0f, 3.0f, 0.3f}};  // angles
    for (int i = 0; i < 2; ++i) {
        for (int p = 0; p < 3; ++p) {
            EXPECT_NEAR(v[(i * 3 + p) * 2], std::cos(want[i][p]), 1e-6) << i << " " << p;
            EXPECT_NEAR(v[(i * 3 + p) * 2 + 1], std::sin(want[i][p]), 1e-6) << i << " " << p;
        }
    }
    EXPECT_THROW(rope_table({1.0f, 2.0f, 3.0f}, {2, 4}, 100.0f), Error);  // not rows of 2
    EXPECT_THROW(rope_table({1.0f}, {3}, 100.0f), Error);                 // odd width
}

TEST(FluxRope, PositionsOfTextImageAndReferences) {
    // 2 text tokens, a 2x3 patch grid, one 4x2 reference latent (2x1 patches, index 1).
    const std::vector<float> ids = flux_positions(2, 2, 3, 2, {{4, 2}}, RefIndexMode::Fixed);
    const std::vector<float> want = {0, 0, 0, 0, 0, 0,                                      // text
                                     0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 1, 0, 0, 1, 1, 0, 1, 2,  // image
                                     1, 0, 0, 1, 1, 0};  // reference
    EXPECT_EQ(ids, want);
    // Two references side by side: the second placed after the first along the wider side.
    const std::vector<float> two =
        flux_positions(0, 0, 0, 2, {{2, 2}, {2, 2}}, RefIndexMode::Fixed);
    EXPECT_EQ(two, (std::vector<float>{1, 0, 0, 1, 2, 0}));
    // A tall first reference: the second goes to its right.
    const std::vector<float> tall =
        flux_positions(0, 0, 0, 2, {{4, 2}, {2, 2}}, RefIndexMode::Fixed);
    EXPECT_EQ(tall, (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 0, 2}));
    const std::vector<float> inc =
        flux_positions(0, 0, 0, 2, {{2, 2}, {2, 2}}, RefIndexMode::Increase);
    EXPECT_EQ(inc, (std::vector<float>{1, 0, 0, 2, 0, 0}));
    const std::vector<float> dec =
        flux_positions(0, 0, 0, 2, {{2, 2}, {2, 2}}, RefIndexMode::Decrease);
    EXPECT_EQ(dec, (std::vector<float>{0, 0, 0, -1, 0, 0}));
}

// q, k rotated by hand, then the reference attention without RoPE.
Tensor rotate(const Tensor& x, const Tensor& rope) {
    std::vector<float> v = x.contiguous().to_vector();
    const std::vector<float> r = rope.to_vector();
    const int64_t L = x.size(2), D = x.size(3);
    for (int64_t row = 0; row < x.numel() / D; ++row) {
        const int64_t pos = row % L;
        for (int64_t p = 0; p < D / 2; ++p) {
            const float c = r[(pos * D / 2 + p) * 2], s = r[(pos * D / 2 + p) * 2 + 1];
            const float a = v[row * D + 2 * p], b = v[row * D + 2 * p + 1];
            v[row * D + 2 * p] = c * a - s * b;
            v[row * D + 2 * p + 1] = s * a + c * b;
        }
    }
    return Tensor::from_vector(x.shape(), v);
}

TEST(FluxRope, AttentionRotatesOnLoad) {
    const Tensor q = test::random_tensor({1, 3, 37, 16}, 1);
    const Tensor k = test::random_tensor({1, 3, 37, 16}, 2);
    const Tensor v = test::random_tensor({1, 3, 37, 16}, 3);
    std::vector<float> pos;
    for (int i = 0; i < 37; ++i) {
        pos.insert(pos.end(), {static_cast<float>(i % 2), static_cast<float>(i / 6),
                               static_cast<float>(i % 6)});
    }
    AttentionOptions options;
    options.rope = rope_table(pos, {4, 6, 6}, 10000.0f);
    const Tensor want =
        ref::scaled_dot_product_attention(rotate(q, options.rope), rotate(k, options.rope), v);
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        test::expect_close(scaled_dot_product_attention(q, k, v, {}, options), want, 2e-5, 2e-5,
                           "kernel");
        // Strided q / k (a head's slice of a wider row) read in place.
        test::expect_close(
            scaled_dot_product_attention(test::non_contiguous_copy(q), test::non_contiguous_copy(k),
                                         v, {}, options),
            want, 2e-5, 2e-5, "strided");
    }
    test::expect_close(ref::scaled_dot_product_attention(q, k, v, {}, options), want, 1e-6, 1e-6,
                       "ref");
    AttentionOptions short_table;
    short_table.rope = rope_table(std::vector<float>(30, 0.0f), {4, 6, 6}, 10000.0f);  // 10 rows
    EXPECT_THROW(scaled_dot_product_attention(q, k, v, {}, short_table), Error);
}

// The numpy forward of `model` on `in` (flux_reference.py), shaped like in["x"].
Tensor numpy_forward(const std::string& model, const Params& in, const std::string& name) {
    return test::numpy_reference("flux_reference.py", model, in, in.at("x").shape(), name);
}

Params tiny_inputs(int64_t h, int64_t w) {
    Params in;
    in["x"] = test::random_tensor({1, 16, h, w}, 11);
    in["t"] = Tensor::from_vector({1}, {0.7f});
    in["context"] = test::random_tensor({1, 5, 32}, 12);
    in["y"] = test::random_tensor({1, 16}, 13);
    in["guidance"] = Tensor::from_vector({1}, {3.5f});
    return in;
}

TEST(FluxModel, TinyModelMatchesNumpy) {
    const std::string model = write_params(tiny_flux(1, 1, true), "flux_tiny");
    const FluxModel flux = load_flux(model);
    EXPECT_EQ(flux.config().depth, 1);
    EXPECT_EQ(flux.config().depth_single, 1);
    EXPECT_EQ(flux.config().heads, 1);
    EXPECT_EQ(flux.config().mlp_hidden, 256);
    EXPECT_TRUE(flux.config().guidance_embed);
    // A latent of odd width: padded to whole patches inside and cropped back.
    const Params in = tiny_inputs(6, 5);
    const Tensor got = flux.forward(in.at("x"), in.at("t"), in.at("context"), in.at("y"), 3.5f);
    test::expect_close(got, numpy_forward(model, in, "flux_tiny"), 2e-4, 2e-4, "FLUX");
}

// Kontext: reference latents of other sizes (one of odd width) as extra tokens, in each of
// the index modes, against the numpy forward; the references change the prediction.
TEST(FluxModel, ReferenceTokensMatchNumpy) {
    const std::string model = write_params(tiny_flux(1, 1, true), "flux_tiny_refs");
    const FluxModel flux = load_flux(model);
    Params in = tiny_inputs(4, 6);
    const std::vector<Tensor> refs = {test::random_tensor({1, 16, 6, 4}, 21),
                                      test::random_tensor({1, 16, 4, 5}, 22)};
    in["ref0"] = refs[0];
    in["ref1"] = refs[1];
    const Tensor plain = flux.forward(in.at("x"), in.at("t"), in.at("context"), in.at("y"), 3.5f);
    for (RefIndexMode mode :
         {RefIndexMode::Fixed, RefIndexMode::Increase, RefIndexMode::Decrease}) {
        const float code = static_cast<float>(static_cast<int>(mode));
        in["ref_index_mode"] = Tensor::from_vector({1}, {code});
        const std::string what = "mode " + std::to_string(static_cast<int>(mode));
        const Tensor got =
            flux.forward(in.at("x"), in.at("t"), in.at("context"), in.at("y"), 3.5f, refs, mode);
        test::expect_close(got, numpy_forward(model, in, "flux_tiny_refs"), 2e-4, 2e-4, what);
        double diff = 0;
        const std::vector<float> a = got.to_vector(), b = plain.to_vector();
        for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(double(a[i] - b[i])));
        EXPECT_GT(diff, 1e-3) << what << ": the references changed nothing";
    }
    // A reference of another channel count is an error, not a crash.
    EXPECT_THROW(flux.forward(in.at("x"), in.at("t"), in.at("context"), in.at("y"), 3.5f,
                              {Tensor::zeros({1, 4, 4, 4})}),
                 Error);
}

// FLUX.1 Fill (img_in of 384: masked-image latent and 8x8 mask cells) and Canny / Depth (128:
// control latent): their extra channels appended to the latent's, against the numpy forward,
// which patchifies each part on its own as the reference; the output has the latent's
// channels, and a latent without the extra channels is an error.
TEST(FluxModel, ExtraInputChannelsMatchNumpy) {
    for (const auto& [width, extra] : {std::pair<int64_t, int64_t>{384, 80}, {128, 16}}) {
        const std::string name = "flux_tiny_in" + std::to_string(width);
        const std::string model = write_params(tiny_flux(1, 1, true, width), name);
        const FluxModel flux = load_flux(model);
        EXPECT_EQ(flux.config().in_channels, width);
        EXPECT_EQ(flux.config().out_channels, 64);
        Params in = tiny_inputs(6, 5);
        in["concat"] = test::random_tensor({1, extra, 6, 5}, 31);
        const Tensor x = concat({in.at("x"), in.at("concat")}, 1);
        const Tensor got = flux.forward(x, in.at("t"), in.at("context"), in.at("y"), 3.5f);
        ASSERT_EQ(got.shape(), (Shape{1, 16, 6, 5}));
        test::expect_close(got, numpy_forward(model, in, name), 1e-4, 1e-4, name);
        EXPECT_THROW(flux.forward(in.at("x"), in.at("t"), in.at("context"), in.at("y"), 3.5f),
                     Error);
    }
}

TEST(FluxModel, SchnellHasNoGuidanceAndDepthComesFromNames) {
    const FluxModel flux = load_flux(write_params(tiny_flux(2, 3, false), "flux_schnell"));
    EXPECT_FALSE(flux.config().guidance_embed);
    EXPECT_EQ(flux.config().depth, 2);
    EXPECT_EQ(flux.config().depth_single, 3);
    const Tensor out =
        flux.forward(test::random_tensor({1, 16, 4, 4}, 1), Tensor::full({1}, 0.5f),
                     test::random_tensor({1, 3, 32}, 2), test::random_tensor({1, 16}, 3), 0.0f);
    EXPECT_EQ(out.shape(), (Shape{1, 16, 4, 4}));
    // Inputs that do not fit the weights are errors, not crashes.
    EXPECT_THROW(flux.forward(Tensor::zeros({1, 4, 4, 4}), Tensor::full({1}, 0.5f),
                              Tensor::zeros({1, 3, 32}), Tensor::zeros({1, 16}), 0.0f),
                 Error);
    EXPECT_THROW(flux.forward(Tensor::zeros({1, 16, 4, 4}), Tensor::full({1}, 0.5f),
                              Tensor::zeros({1, 3, 64}), Tensor::zeros({1, 16}), 0.0f),
                 Error);
}

TEST(FluxModel, MisShapedTensorIsNamed) {
    Params p = tiny_flux(1, 1, true);
    p["double_blocks.0.txt_attn.proj.weight"] = Tensor::zeros({128, 64});
    const std::string path = write_params(p, "flux_bad");
    try {
        load_flux(path);
        FAIL() << "a mis-shaped tensor loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("double_blocks.0.txt_attn.proj.weight"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sd
