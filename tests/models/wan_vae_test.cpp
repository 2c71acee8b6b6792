// The Wan 2.1 and 2.2 VAEs: tiny random ones (widths 4 .. 16 or 24, z = 4) against the
// independent numpy implementations in wan_vae_reference.py and wan22_vae_reference.py -- a
// five-frame clip encoded in two chunks, three latent frames decoded into nine (the time
// caches of every kind of layer between chunks; 2.2's level shortcuts on first and later
// chunks), an image as a one-frame clip -- and the causal convolution's padding and cache by
// hand.
#include "models/wan_vae.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "base/error.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/tiny_wan_vae.h"
#include "ops/ops.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;

using test::kTinyVaeDim;
constexpr int64_t kDim = kTinyVaeDim, kZ = 4;
using test::TinyWan22Vae;
using test::TinyWanVae;

WanVae load_vae(const std::string& path, bool with_encoder) {
    ModelFiles files;
    files.add(path, ModelRole::Vae);
    return WanVae::load(Weights(files, "first_stage_model."), with_encoder);
}

// Frames-first [T, C, H, W] <-> Wan's [C, T, H, W].
Tensor swap_tc(const Tensor& x) {
    return permute_copy(x, {1, 0, 2, 3});
}

// wan_vae_reference.py (or `script`) on `input` (frames-first), named "video" (encode) or
// "latent" (decode); its result, frames-first, of `out_shape`.
Tensor numpy_run(const std::string& model, const std::string& what, const Tensor& input,
                 const Shape& out_shape, const std::string& name,
                 const std::string& script = "wan_vae_reference.py") {
    const std::string inputs = test::write_f32_safetensors({{what, swap_tc(input)}}, name + "_in");
    const std::string out_path = test::temp_path(name + "_out.f32");
    const std::string cmd = "/usr/bin/python3 " + test::tests_source_dir() + "/models/" + script +
                            " " + model + " " + inputs + " " + out_path;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(out_path, std::ios::binary);
    const Shape wan_shape = {out_shape[1], out_shape[0], out_shape[2], out_shape[3]};
    std::vector<float> values(
        static_cast<size_t>(out_shape[0] * out_shape[1] * out_shape[2] * out_shape[3]));
    f.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
    EXPECT_TRUE(f.good()) << out_path;
    std::remove(out_path.c_str());
    return swap_tc(Tensor::from_vector(wan_shape, values));
}

class WanVaeTest : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        model_ = new std::string(test::write_f32_safetensors(
            TinyWanVae().p, "wan_vae_tiny_" + std::to_string(::getpid())));
    }
    static void TearDownTestSuite() {
        std::remove(model_->c_str());
        delete model_;
    }
    static std::string* model_;
};
std::string* WanVaeTest::model_ = nullptr;

TEST_F(WanVaeTest, ReadsItsWidthsFromTheWeights) {
    const WanVae vae = load_vae(*model_, true);
    EXPECT_EQ(vae.config().z, kZ);
    EXPECT_EQ(vae.config().dim, kDim);
    EXPECT_EQ(vae.config().dec_dim, kDim);
    EXPECT_FALSE(vae.config().wan22);
    EXPECT_EQ(vae.config().scale(), 8);
    EXPECT_TRUE(vae.has_encoder());
    EXPECT_FALSE(load_vae(*model_, false).has_encoder());
}

TEST_F(WanVaeTest, EncodesAClipInChunksAsNumpy) {
    const WanVae vae = load_vae(*model_, true);
    const Tensor video = test::random_tensor({5, 3, 16, 16}, 41);
    const Tensor got = vae.encode(video);
    ASSERT_EQ(got.shape(), (Shape{2, kZ, 2, 2}));
    test::expect_close(got, numpy_run(*model_, "video", video, got.shape(), "wan_enc"), 1e-4, 1e-4,
                       "Wan VAE encode");
}

TEST_F(WanVaeTest, DecodesLatentFramesAsNumpy) {
    const WanVae vae = load_vae(*model_, false);
    const Tensor latent = test::random_tensor({3, kZ, 2, 3}, 42);
    const Tensor got = vae.decode(latent);
    ASSERT_EQ(got.shape(), (Shape{9, 3, 16, 24}));
    test::expect_close(got, numpy_run(*model_, "latent", latent, got.shape(), "wan_dec"), 1e-4,
                       1e-4, "Wan VAE decode");
}

TEST_F(WanVaeTest, AnImageIsAOneFrameClip) {
    const WanVae vae = load_vae(*model_, true);
    const Tensor image = test::random_tensor({1, 3, 24, 16}, 43);
    const Tensor z = vae.encode(image);
    ASSERT_EQ(z.shape(), (Shape{1, kZ, 3, 2}));
    test::expect_close(z, numpy_run(*model_, "video", image, z.shape(), "wan_enc1"), 1e-4, 1e-4,
                       "Wan VAE image encode");
    const Tensor x = vae.decode(z);
    ASSERT_EQ(x.shape(), (Shape{1, 3, 24, 16}));
    test::expect_close(x, numpy_run(*model_, "latent", z, x.shape(), "wan_dec1"), 1e-4, 1e-4,
                       "Wan VAE image decode");
}

// Qwen-Image-Layered's VAE: a Wan 2.1 VAE whose frames are RGBA, 4 channels in and out.
TEST(WanVaeRgba, EncodesAndDecodesFourChannelsAsNumpy) {
    const std::string model = test::write_f32_safetensors(TinyWanVae(kZ, 4).p, "wan_vae_rgba_tiny");
    const WanVae vae = load_vae(model, true);
    EXPECT_EQ(vae.config().colors, 4);
    EXPECT_EQ(vae.config().video_channels(), 4);
    const Tensor image = test::random_tensor({1, 4, 16, 24}, 44);
    const Tensor z = vae.encode(image);
    ASSERT_EQ(z.shape(), (Shape{1, kZ, 2, 3}));
    test::expect_close(z, numpy_run(model, "video", image, z.shape(), "wan_rgba_enc"), 1e-4, 1e-4,
                       "RGBA Wan VAE encode");
    const Tensor x = vae.decode(z);
    ASSERT_EQ(x.shape(), (Shape{1, 4, 16, 24}));
    test::expect_close(x, numpy_run(model, "latent", z, x.shape(), "wan_rgba_dec"), 1e-4, 1e-4,
                       "RGBA Wan VAE decode");
    // An RGB image is refused by name, not read past its end.
    const std::string error = test::error_of([&] {
        vae.encode(test::random_tensor({1, 3, 16, 24}, 45));
    });
    EXPECT_NE(error.find("frames of 4 channels, not 3"), std::string::npos) << error;
}

TEST_F(WanVaeTest, RefusesAClipOfTheWrongLength) {
    const WanVae vae = load_vae(*model_, true);
    EXPECT_THROW(vae.encode(test::random_tensor({4, 3, 16, 16}, 44)), Error);
    EXPECT_THROW(load_vae(*model_, false).encode(test::random_tensor({1, 3, 16, 16}, 45)), Error);
}

class Wan22VaeTest : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        model_ = new std::string(test::write_f32_safetensors(
            TinyWan22Vae().p, "wan22_vae_tiny_" + std::to_string(::getpid())));
    }
    static void TearDownTestSuite() {
        std::remove(model_->c_str());
        delete model_;
    }
    static Tensor numpy(const std::string& what, const Tensor& input, const Shape& out_shape,
                        const std::string& name) {
        return numpy_run(*model_, what, input, out_shape, name, "wan22_vae_reference.py");
    }
    static std::string* model_;
};
std::string* Wan22VaeTest::model_ = nullptr;

TEST_F(Wan22VaeTest, ReadsItsLayoutFromTheWeights) {
    const WanVae vae = load_vae(*model_, true);
    EXPECT_TRUE(vae.config().wan22);
    EXPECT_EQ(vae.config().patch, 2);
    EXPECT_EQ(vae.config().scale(), 16);
    EXPECT_EQ(vae.config().z, kZ);
    EXPECT_EQ(vae.config().dim, kDim);
    EXPECT_EQ(vae.config().dec_dim, test::kTinyVaeDecDim22);
    EXPECT_TRUE(vae.has_encoder());
    const WanVae decoder = load_vae(*model_, false);
    EXPECT_FALSE(decoder.has_encoder());
    EXPECT_TRUE(decoder.config().wan22);
}

TEST_F(Wan22VaeTest, EncodesAClipInChunksAsNumpy) {
    const WanVae vae = load_vae(*model_, true);
    const Tensor video = test::random_tensor({5, 3, 32, 32}, 51);
    const Tensor got = vae.encode(video);
    ASSERT_EQ(got.shape(), (Shape{2, kZ, 2, 2}));
    test::expect_close(got, numpy("video", video, got.shape(), "wan22_enc"), 1e-4, 1e-4,
                       "Wan 2.2 VAE encode");
}

TEST_F(Wan22VaeTest, DecodesLatentFramesAsNumpy) {
    const WanVae vae = load_vae(*model_, false);
    const Tensor latent = test::random_tensor({3, kZ, 2, 3}, 52);
    const Tensor got = vae.decode(latent);
    ASSERT_EQ(got.shape(), (Shape{9, 3, 32, 48}));
    test::expect_close(got, numpy("latent", latent, got.shape(), "wan22_dec"), 1e-4, 1e-4,
                       "Wan 2.2 VAE decode");
}

TEST_F(Wan22VaeTest, AnImageIsAOneFrameClip) {
    const WanVae vae = load_vae(*model_, true);
    const Tensor image = test::random_tensor({1, 3, 48, 32}, 53);
    const Tensor z = vae.encode(image);
    ASSERT_EQ(z.shape(), (Shape{1, kZ, 3, 2}));
    test::expect_close(z, numpy("video", image, z.shape(), "wan22_enc1"), 1e-4, 1e-4,
                       "Wan 2.2 VAE image encode");
    const Tensor x = vae.decode(z);
    ASSERT_EQ(x.shape(), (Shape{1, 3, 48, 32}));
    test::expect_close(x, numpy("latent", z, x.shape(), "wan22_dec1"), 1e-4, 1e-4,
                       "Wan 2.2 VAE image decode");
}

TEST_F(Wan22VaeTest, RefusesFramesNotMultiplesOf16) {
    const WanVae vae = load_vae(*model_, true);
    EXPECT_THROW(vae.encode(test::random_tensor({1, 3, 24, 32}, 54)), Error);
    EXPECT_THROW(vae.encode(test::random_tensor({4, 3, 32, 32}, 55)), Error);
}

// The real Wan 2.1 VAE's layout (the fixture made from its manifest): every tensor bound with
// its checkpoint shape, the widths read as Wan's (96, z = 16), an image encoded and decoded.
TEST(WanVaeLayout, TheRealFileLoadsAndRuns) {
    const WanVae vae = load_vae(test::fixture_file("wan/wan21_vae_f32_seed42.safetensors"), true);
    EXPECT_EQ(vae.config().z, 16);
    EXPECT_EQ(vae.config().dim, 96);
    EXPECT_EQ(vae.config().dec_dim, 96);
    const Tensor z = vae.encode(test::random_tensor({1, 3, 32, 16}, 46));
    ASSERT_EQ(z.shape(), (Shape{1, 16, 4, 2}));
    const Tensor x = vae.decode(z);
    ASSERT_EQ(x.shape(), (Shape{1, 3, 32, 16}));
    for (float v : x.to_vector()) ASSERT_TRUE(std::isfinite(v));
}

// A causal kernel of 3 frames with a padding of 1: two zero frames in front, or the frames a
// cache kept from the chunk before.
TEST(CausalConv3d, PadsInFrontOrReadsTheCache) {
    Params p;
    // in = out = 1 channel, kt = 3, 1x1: y[t] = x[t-2] + 2 x[t-1] + 4 x[t] + 0.5.
    p["c.weight"] = Tensor::from_vector({1, 1, 3, 1, 1}, {1, 2, 4});
    p["c.bias"] = Tensor::from_vector({1}, {0.5f});
    const std::string path = test::write_f32_safetensors(p, "causal_conv");
    ModelFiles files;
    files.add(path, ModelRole::Vae);
    const CausalConv3d conv =
        CausalConv3d::load(Weights(files, "first_stage_model.")["c"], 1, 1, 3, 1, 1, 0);
    const Tensor x = Tensor::from_vector({3, 1, 1, 1}, {1, 10, 100});
    EXPECT_EQ(conv.forward(x).to_vector(), (std::vector<float>{4.5f, 42.5f, 421.5f}));
    const Tensor past = Tensor::from_vector({1, 1, 1, 1}, {7});
    EXPECT_EQ(conv.forward(x, past).to_vector(), (std::vector<float>{18.5f, 49.5f, 421.5f}));
    // Through the cache: the second chunk sees the first one's last two frames.
    CausalConvCache cache;
    cache.begin_chunk();
    cache.conv(conv, x);
    cache.begin_chunk();
    const Tensor next = Tensor::from_vector({1, 1, 1, 1}, {1000});
    EXPECT_EQ(cache.conv(conv, next).to_vector(), (std::vector<float>{4210.5f}));
    std::remove(path.c_str());
}

}  // namespace
}  // namespace sd
