// ESRGAN: the layout read from the weights (block count, width, upsampling stages, a
// pixel-unshuffled input, both namings, a prefix, the full-size x4plus fixture), errors for
// files that are not ESRGANs, and the forward pass against an independent computation with
// the reference ops (ref::conv2d, concat, upsample), written from BasicSR's rrdbnet_arch.py.
//
// Tolerance: the model runs the GEMM kernels in f32 (other summation order than the
// reference's double accumulation), through ~20 convolutions: 1e-4 absolute on values ~1.
#include "models/esrgan.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "esrgan_files.h"
#include "fixture_files.h"
#include "ops/ops.h"
#include "test_util.h"

namespace sd {
namespace {

using test::TinyEsrgan;

std::string tiny_path(const std::string& name) {
    return test::temp_path(name + ".safetensors");
}

EsrganLayout layout_of(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    return detect_esrgan(files, path);
}

// ---- an independent RRDBNet over the reference ops ----

Tensor lrelu(const Tensor& x) {
    std::vector<float> v = x.to_vector();
    for (float& f : v) f = f < 0.0f ? 0.2f * f : f;
    return Tensor::from_vector(x.shape(), v);
}

struct RefNet {
    std::map<std::string, Tensor> w;
    Tensor conv(const std::string& name, const Tensor& x) const {
        Conv2dOptions o;
        o.pad_h = o.pad_w = 1;
        return ref::conv2d(x, w.at(name + ".weight"), w.at(name + ".bias"), o);
    }
    Tensor rdb(const std::string& p, const Tensor& x) const {
        std::vector<Tensor> feats = {x};
        for (int j = 1; j <= 4; ++j)
            feats.push_back(lrelu(conv(p + ".conv" + std::to_string(j), ref::concat(feats, 1))));
        return ref::add(ref::scale(conv(p + ".conv5", ref::concat(feats, 1)), 0.2f), x);
    }
    Tensor forward(Tensor x, int blocks, int upsamples, int unshuffle) const {
        if (unshuffle == 2) {  // torch.pixel_unshuffle, by its definition
            const int64_t c = x.size(1), h = x.size(2) / 2, wd = x.size(3) / 2;
            std::vector<float> in = x.to_vector(), out(in.size());
            for (int64_t k = 0; k < c; ++k)
                for (int64_t i = 0; i < 2; ++i)
                    for (int64_t j = 0; j < 2; ++j)
                        for (int64_t y = 0; y < h; ++y)
                            for (int64_t z = 0; z < wd; ++z)
                                out[(((k * 4 + i * 2 + j) * h + y) * wd) + z] =
                                    in[(k * 2 * h + 2 * y + i) * 2 * wd + 2 * z + j];
            x = Tensor::from_vector({1, c * 4, h, wd}, out);
        }
        Tensor feat = conv("conv_first", x), body = feat;
        for (int b = 0; b < blocks; ++b) {
            const std::string p = "body." + std::to_string(b);
            Tensor out = rdb(p + ".rdb3", rdb(p + ".rdb2", rdb(p + ".rdb1", body)));
            body = ref::add(ref::scale(out, 0.2f), body);
        }
        feat = ref::add(feat, conv("conv_body", body));
        for (int u = 1; u <= upsamples; ++u)
            feat = lrelu(conv("conv_up" + std::to_string(u), ref::upsample_nearest2x(feat)));
        return conv("conv_last", lrelu(conv("conv_hr", feat)));
    }
};

void expect_forward_matches(const TinyEsrgan& t, int64_t h, int64_t w, uint32_t seed, int scale) {
    const std::string path = tiny_path("esrgan_fwd_" + std::to_string(seed));
    RefNet ref{test::write_tiny_esrgan(path, t, seed)};
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    Esrgan model = Esrgan::load(files, path);
    EXPECT_EQ(model.scale(), scale);
    Tensor x = test::random_tensor({1, 3, h, w}, seed + 1000, 0.0f, 1.0f);
    Tensor got = model.forward(x);
    ASSERT_EQ(got.shape(), (Shape{1, 3, h * scale, w * scale}));
    const int unshuffle = t.in_channels == 12 ? 2 : 1;
    test::expect_close(got, ref.forward(x, t.blocks, t.upsamples, unshuffle), 1e-4, 1e-4,
                       "ESRGAN forward");
}

TEST(Esrgan, LayoutOfRealEsrganX4) {
    TinyEsrgan t;
    test::write_tiny_esrgan(tiny_path("x4"), t, 1);
    const EsrganLayout l = layout_of(tiny_path("x4"));
    EXPECT_FALSE(l.original_names);
    EXPECT_EQ(l.num_blocks, 2);
    EXPECT_EQ(l.num_feat, 8);
    EXPECT_EQ(l.num_grow, 4);
    EXPECT_EQ(l.upsamples, 2);
    EXPECT_EQ(l.unshuffle, 1);
    EXPECT_EQ(l.scale, 4);
}

TEST(Esrgan, LayoutOfAnime6BlocksX2AndScale2) {
    TinyEsrgan anime;
    anime.blocks = 6;
    test::write_tiny_esrgan(tiny_path("anime"), anime, 2);
    EXPECT_EQ(layout_of(tiny_path("anime")).num_blocks, 6);
    EXPECT_EQ(layout_of(tiny_path("anime")).scale, 4);

    TinyEsrgan x2plus;  // RealESRGAN_x2plus: 2x pixel-unshuffle, then two 2x stages
    x2plus.in_channels = 12;
    test::write_tiny_esrgan(tiny_path("x2plus"), x2plus, 3);
    const EsrganLayout l = layout_of(tiny_path("x2plus"));
    EXPECT_EQ(l.unshuffle, 2);
    EXPECT_EQ(l.upsamples, 2);
    EXPECT_EQ(l.scale, 2);

    TinyEsrgan one_stage;  // the reference's scale 2: conv_up1 only
    one_stage.upsamples = 1;
    test::write_tiny_esrgan(tiny_path("up1"), one_stage, 4);
    EXPECT_EQ(layout_of(tiny_path("up1")).scale, 2);
}

TEST(Esrgan, LayoutWithOriginalNamesAndPrefix) {
    TinyEsrgan old4;
    old4.original_names = true;
    test::write_tiny_esrgan(tiny_path("old4"), old4, 5);
    EsrganLayout l = layout_of(tiny_path("old4"));
    EXPECT_TRUE(l.original_names);
    EXPECT_EQ(l.num_blocks, 2);
    EXPECT_EQ(l.scale, 4);

    TinyEsrgan old2 = old4;
    old2.upsamples = 1;
    old2.blocks = 3;
    test::write_tiny_esrgan(tiny_path("old2"), old2, 6);
    l = layout_of(tiny_path("old2"));
    EXPECT_EQ(l.num_blocks, 3);
    EXPECT_EQ(l.scale, 2);

    TinyEsrgan ema;
    ema.prefix = "params_ema.";
    test::write_tiny_esrgan(tiny_path("ema"), ema, 7);
    l = layout_of(tiny_path("ema"));
    EXPECT_EQ(l.prefix, "params_ema.");
    EXPECT_EQ(l.scale, 4);
}

TEST(Esrgan, LayoutOfTheX4PlusFixture) {
    const std::string path = test::generated_checkpoint("esrgan_x4plus", "f32", 6);
    const EsrganLayout l = layout_of(path);
    EXPECT_EQ(l.num_blocks, 23);
    EXPECT_EQ(l.num_feat, 64);
    EXPECT_EQ(l.num_grow, 32);
    EXPECT_EQ(l.scale, 4);
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    EXPECT_NO_THROW(Esrgan::load(files, path));  // every tensor bound, none missing
}

TEST(Esrgan, OtherFilesAreErrorsNamingThem) {
    const std::string path = tiny_path("not_esrgan");
    write_safetensors(path,
                      {{"model.diffusion_model.out.2.weight", DType::F32, Shape{4, 4, 3, 3}, [] {
                            return Tensor::zeros({4, 4, 3, 3});
                        }}});
    try {
        layout_of(path);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not an ESRGAN"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("not_esrgan"), std::string::npos) << e.what();
    }
    // An ESRGAN missing a block's conv: the loader names the tensor.
    TinyEsrgan t;
    auto weights = test::write_tiny_esrgan(tiny_path("full"), t, 8);
    std::vector<OutputTensor> out;
    for (const auto& [name, tensor] : weights) {
        if (name == "body.1.rdb2.conv3.weight") continue;
        const Tensor v = tensor;
        out.push_back({name, DType::F32, v.shape(), [v] { return v; }});
    }
    write_safetensors(tiny_path("holed"), out);
    ModelFiles files;
    files.add(tiny_path("holed"), ModelRole::Checkpoint);
    try {
        Esrgan::load(files, "holed");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("body.1.rdb2.conv3.weight"), std::string::npos)
            << e.what();
    }
}

TEST(Esrgan, ForwardMatchesAnIndependentComputation) {
    TinyEsrgan t;
    expect_forward_matches(t, 9, 13, 20, 4);
}

TEST(Esrgan, ForwardOfScale2AndPixelUnshuffle) {
    TinyEsrgan up1;
    up1.upsamples = 1;
    expect_forward_matches(up1, 8, 6, 30, 2);
    TinyEsrgan x2plus;
    x2plus.in_channels = 12;
    expect_forward_matches(x2plus, 10, 14, 40, 2);
}

// The same weights under ESRGAN's original names give the same result; an odd-sized input
// to the pixel-unshuffled model is padded (reflect) and cropped back.
TEST(Esrgan, OriginalNamesAndOddSizes) {
    TinyEsrgan t, old;
    old.original_names = true;
    test::write_tiny_esrgan(tiny_path("same_new"), t, 50);
    test::write_tiny_esrgan(tiny_path("same_old"), old, 50);
    ModelFiles a, b;
    a.add(tiny_path("same_new"), ModelRole::Checkpoint);
    b.add(tiny_path("same_old"), ModelRole::Checkpoint);
    Tensor x = test::random_tensor({1, 3, 7, 5}, 51, 0.0f, 1.0f);
    test::expect_close(Esrgan::load(b, "old").forward(x), Esrgan::load(a, "new").forward(x), 0, 0,
                       "original names");

    TinyEsrgan x2plus;
    x2plus.in_channels = 12;
    test::write_tiny_esrgan(tiny_path("odd"), x2plus, 52);
    ModelFiles c;
    c.add(tiny_path("odd"), ModelRole::Checkpoint);
    Tensor y = Esrgan::load(c, "odd").forward(x);
    EXPECT_EQ(y.shape(), (Shape{1, 3, 14, 10}));
}

}  // namespace
}  // namespace sd
