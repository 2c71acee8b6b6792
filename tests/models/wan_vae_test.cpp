// The Wan 2.1 VAE: a tiny random one (widths 4 .. 16, z = 4) against the independent numpy
// implementation in wan_vae_reference.py -- a five-frame clip encoded in two chunks, three
// latent frames decoded into nine (the time caches of every kind of layer between chunks), an
// image as a one-frame clip -- and the causal convolution's padding and cache by hand.
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
#include "ops/ops.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;

constexpr int64_t kDim = 4, kZ = 4;

struct TinyWanVae {
    Params p;
    uint32_t seed = 300;

    void conv(const std::string& name, int64_t in, int64_t out, Shape kernel) {
        int64_t fan_in = in;
        for (int64_t k : kernel) fan_in *= k;
        const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
        Shape shape = {out, in};
        for (int64_t k : kernel) shape.push_back(k);
        p[name + ".weight"] = test::random_tensor(shape, seed++, -bound, bound);
        p[name + ".bias"] = test::random_tensor({out}, seed++, -0.1f, 0.1f);
    }
    void norm(const std::string& name, int64_t c, Shape tail = {1, 1, 1}) {
        Shape shape = {c};
        for (int64_t k : tail) shape.push_back(k);
        p[name + ".gamma"] = test::random_tensor(shape, seed++, 0.5f, 1.5f);
    }
    void residual(const std::string& name, int64_t in, int64_t out) {
        norm(name + ".residual.0", in);
        conv(name + ".residual.2", in, out, {3, 3, 3});
        norm(name + ".residual.3", out);
        conv(name + ".residual.6", out, out, {3, 3, 3});
        if (in != out) conv(name + ".shortcut", in, out, {1, 1, 1});
    }
    void middle(const std::string& name, int64_t c) {
        residual(name + ".0", c, c);
        norm(name + ".1.norm", c, {1, 1});
        conv(name + ".1.to_qkv", c, 3 * c, {1, 1});
        conv(name + ".1.proj", c, c, {1, 1});
        residual(name + ".2", c, c);
    }

    TinyWanVae() {
        // Encoder: widths 4, 4, 8, 16, 16; downsamples 2, 5 (time too), 8 (time too).
        conv("encoder.conv1", 3, kDim, {3, 3, 3});
        const int64_t enc[] = {kDim, kDim, 2 * kDim, 4 * kDim, 4 * kDim};
        int index = 0;
        for (int i = 0; i < 4; ++i) {
            int64_t in = enc[i];
            for (int j = 0; j < 2; ++j, in = enc[i + 1])
                residual("encoder.downsamples." + std::to_string(index++), in, enc[i + 1]);
            if (i == 3) break;
            const std::string r = "encoder.downsamples." + std::to_string(index++);
            conv(r + ".resample.1", enc[i + 1], enc[i + 1], {3, 3});
            if (i > 0) conv(r + ".time_conv", enc[i + 1], enc[i + 1], {3, 1, 1});
        }
        middle("encoder.middle", 4 * kDim);
        norm("encoder.head.0", 4 * kDim);
        conv("encoder.head.2", 4 * kDim, 2 * kZ, {3, 3, 3});
        conv("conv1", 2 * kZ, 2 * kZ, {1, 1, 1});
        conv("conv2", kZ, kZ, {1, 1, 1});
        // Decoder: widths 16, 16, 16, 8, 4; upsamples 3, 7 (time too), 11.
        conv("decoder.conv1", kZ, 4 * kDim, {3, 3, 3});
        middle("decoder.middle", 4 * kDim);
        const int64_t dec[] = {4 * kDim, 4 * kDim, 4 * kDim, 2 * kDim, kDim};
        index = 0;
        for (int i = 0; i < 4; ++i) {
            int64_t in = i == 0 ? dec[i] : dec[i] / 2;
            for (int j = 0; j < 3; ++j, in = dec[i + 1])
                residual("decoder.upsamples." + std::to_string(index++), in, dec[i + 1]);
            if (i == 3) break;
            const std::string r = "decoder.upsamples." + std::to_string(index++);
            conv(r + ".resample.1", dec[i + 1], dec[i + 1] / 2, {3, 3});
            if (i < 2) conv(r + ".time_conv", dec[i + 1], 2 * dec[i + 1], {3, 1, 1});
        }
        norm("decoder.head.0", kDim);
        conv("decoder.head.2", kDim, 3, {3, 3, 3});
    }
};

WanVae load_vae(const std::string& path, bool with_encoder) {
    ModelFiles files;
    files.add(path, ModelRole::Vae);
    return WanVae::load(Weights(files, "first_stage_model."), with_encoder);
}

// Frames-first [T, C, H, W] <-> Wan's [C, T, H, W].
Tensor swap_tc(const Tensor& x) {
    return permute_copy(x, {1, 0, 2, 3});
}

// wan_vae_reference.py on `input` (frames-first), named "video" (encode) or "latent" (decode);
// its result, frames-first, of `out_shape`.
Tensor numpy_run(const std::string& model, const std::string& what, const Tensor& input,
                 const Shape& out_shape, const std::string& name) {
    const std::string inputs = test::write_f32_safetensors({{what, swap_tc(input)}}, name + "_in");
    const std::string out_path = testing::TempDir() + "/" + name + "_out.f32";
    const std::string cmd = "/usr/bin/python3 " + test::tests_source_dir() +
                            "/models/wan_vae_reference.py " + model + " " + inputs + " " + out_path;
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

TEST_F(WanVaeTest, RefusesAClipOfTheWrongLength) {
    const WanVae vae = load_vae(*model_, true);
    EXPECT_THROW(vae.encode(test::random_tensor({4, 3, 16, 16}, 44)), Error);
    EXPECT_THROW(load_vae(*model_, false).encode(test::random_tensor({1, 3, 16, 16}, 45)), Error);
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
