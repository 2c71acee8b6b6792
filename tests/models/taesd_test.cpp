// TAESD: the layout read from the weights, the decoder and encoder checked against a plain
// loop-by-loop computation of taesd.py on small random weights (width 4), the shapes of a
// full-size fixture, and files that are not a TAESD.
#include "models/taesd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using Params = std::map<std::string, Tensor>;

// A TAESD of `width` channels with random weights, every tensor the real file has.
Params small_taesd(int64_t width, int64_t z, bool with_encoder) {
    Params p;
    uint32_t seed = 1;
    auto conv = [&](const std::string& name, int64_t in, int64_t out, bool bias) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in * 9));
        p[name + ".weight"] = test::random_tensor({out, in, 3, 3}, seed++, -bound, bound);
        if (bias) p[name + ".bias"] = test::random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    auto block = [&](const std::string& name) {
        for (int i : {0, 2, 4}) conv(name + ".conv." + std::to_string(i), width, width, true);
    };
    const std::string d = "decoder.layers.";
    conv(d + "0", z, width, true);
    for (int i : {2, 3, 4, 7, 8, 9, 12, 13, 14, 17}) block(d + std::to_string(i));
    for (int i : {6, 11, 16}) conv(d + std::to_string(i), width, width, false);
    conv(d + "18", width, 3, true);
    if (with_encoder) {
        const std::string e = "encoder.layers.";
        conv(e + "0", 3, width, true);
        for (int i : {1, 3, 4, 5, 7, 8, 9, 11, 12, 13}) block(e + std::to_string(i));
        for (int i : {2, 6, 10}) conv(e + std::to_string(i), width, width, false);
        conv(e + "14", width, z, true);
    }
    return p;
}

std::string write_params(const Params& p, const std::string& name) {
    return test::write_f32_safetensors(p, name);
}

// --- an independent taesd.py, one loop per operation, on std::vector images ---

struct Image3 {
    int64_t c, h, w;
    std::vector<float> v;
    float& at(int64_t k, int64_t y, int64_t x) { return v[(k * h + y) * w + x]; }
    float at(int64_t k, int64_t y, int64_t x) const { return v[(k * h + y) * w + x]; }
};

Image3 from_tensor(const Tensor& t) {
    return {t.size(1), t.size(2), t.size(3), t.contiguous().to_vector()};
}

Image3 conv3x3(const Image3& x, const Params& p, const std::string& name, int stride) {
    const Tensor& wt = p.at(name + ".weight");
    const std::vector<float> w = wt.to_vector();
    const int64_t out = wt.size(0);
    std::vector<float> b(out, 0.0f);
    if (p.count(name + ".bias")) b = p.at(name + ".bias").to_vector();
    Image3 y{out, (x.h - 1) / stride + 1, (x.w - 1) / stride + 1, {}};
    y.v.assign(out * y.h * y.w, 0.0f);
    for (int64_t o = 0; o < out; ++o)
        for (int64_t oy = 0; oy < y.h; ++oy)
            for (int64_t ox = 0; ox < y.w; ++ox) {
                double s = b[o];
                for (int64_t c = 0; c < x.c; ++c)
                    for (int64_t ky = 0; ky < 3; ++ky)
                        for (int64_t kx = 0; kx < 3; ++kx) {
                            int64_t iy = oy * stride + ky - 1, ix = ox * stride + kx - 1;
                            if (iy < 0 || iy >= x.h || ix < 0 || ix >= x.w) continue;
                            s += w[((o * x.c + c) * 3 + ky) * 3 + kx] * x.at(c, iy, ix);
                        }
                y.at(o, oy, ox) = static_cast<float>(s);
            }
    return y;
}

Image3 relu(Image3 x) {
    for (float& v : x.v) v = std::max(v, 0.0f);
    return x;
}

Image3 block(const Image3& x, const Params& p, const std::string& name) {
    Image3 h = relu(conv3x3(x, p, name + ".conv.0", 1));
    h = relu(conv3x3(h, p, name + ".conv.2", 1));
    h = conv3x3(h, p, name + ".conv.4", 1);
    for (size_t i = 0; i < h.v.size(); ++i) h.v[i] += x.v[i];
    return relu(h);
}

Image3 upsample(const Image3& x) {
    Image3 y{x.c, x.h * 2, x.w * 2, {}};
    y.v.resize(x.v.size() * 4);
    for (int64_t k = 0; k < x.c; ++k)
        for (int64_t yy = 0; yy < y.h; ++yy)
            for (int64_t xx = 0; xx < y.w; ++xx) y.at(k, yy, xx) = x.at(k, yy / 2, xx / 2);
    return y;
}

Image3 reference_decode(Image3 z, const Params& p) {
    for (float& v : z.v) v = std::tanh(v / 3.0f) * 3.0f;
    const std::string d = "decoder.layers.";
    Image3 h = relu(conv3x3(z, p, d + "0", 1));
    for (int stage = 0; stage < 3; ++stage) {
        const int base = 2 + 5 * stage;
        for (int i = 0; i < 3; ++i) h = block(h, p, d + std::to_string(base + i));
        h = conv3x3(upsample(h), p, d + std::to_string(base + 4), 1);
    }
    h = block(h, p, d + "17");
    return conv3x3(h, p, d + "18", 1);
}

Image3 reference_encode(const Image3& x, const Params& p) {
    const std::string e = "encoder.layers.";
    Image3 h = block(conv3x3(x, p, e + "0", 1), p, e + "1");
    for (int stage = 0; stage < 3; ++stage) {
        const int base = 2 + 4 * stage;
        h = conv3x3(h, p, e + std::to_string(base), 2);
        for (int i = 1; i <= 3; ++i) h = block(h, p, e + std::to_string(base + i));
    }
    return conv3x3(h, p, e + "14", 1);
}

void expect_close(const Tensor& got, const Image3& want, float tol) {
    ASSERT_EQ(got.shape(), (Shape{1, want.c, want.h, want.w}));
    std::vector<float> g = got.contiguous().to_vector();
    float worst = 0.0f;
    for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::fabs(g[i] - want.v[i]));
    EXPECT_LT(worst, tol);
}

TEST(Taesd, DecoderMatchesAPlainComputation) {
    const Params p = small_taesd(4, 4, false);
    ModelFiles files;
    files.add(write_params(p, "taesd_small_dec"), ModelRole::Checkpoint);
    Taesd tae = Taesd::load(Weights(files, ""), /*with_encoder=*/false);
    EXPECT_EQ(tae.config().width, 4);
    EXPECT_EQ(tae.config().latent_channels, 4);
    EXPECT_FALSE(tae.has_encoder());
    const Tensor z = test::random_tensor({1, 4, 3, 5}, 77, -4.0f, 4.0f);  // past the soft clamp
    const Tensor y = tae.decode(z);
    expect_close(y, reference_decode(from_tensor(z), p), 1e-4f);
    EXPECT_THROW(tae.encode(Tensor::zeros({1, 3, 24, 40})), Error);
}

TEST(Taesd, EncoderMatchesAPlainComputation) {
    const Params p = small_taesd(4, 4, true);
    ModelFiles files;
    files.add(write_params(p, "taesd_small_enc"), ModelRole::Checkpoint);
    Taesd tae = Taesd::load(Weights(files, ""), /*with_encoder=*/true);
    ASSERT_TRUE(tae.has_encoder());
    const Tensor x = test::random_tensor({1, 3, 24, 40}, 5, 0.0f, 1.0f);
    expect_close(tae.encode(x), reference_encode(from_tensor(x), p), 1e-4f);
    EXPECT_THROW(tae.encode(Tensor::zeros({1, 3, 20, 40})), Error);  // not a multiple of 8
}

TEST(Taesd, FixtureShapes) {
    ModelFiles files;
    files.add(test::generated_checkpoint("taesd", "f32", 5), ModelRole::Checkpoint);
    Taesd tae = Taesd::load(Weights(files, ""), /*with_encoder=*/true);
    EXPECT_EQ(tae.config().width, 64);
    EXPECT_EQ(tae.config().latent_channels, 4);
    const Tensor image = tae.decode(test::random_tensor({1, 4, 4, 6}, 3));
    EXPECT_EQ(image.shape(), (Shape{1, 3, 32, 48}));
    const Tensor latent = tae.encode(test::random_tensor({1, 3, 32, 48}, 4, 0.0f, 1.0f));
    EXPECT_EQ(latent.shape(), (Shape{1, 4, 4, 6}));
    for (float v : image.to_vector()) ASSERT_TRUE(std::isfinite(v));
    EXPECT_THROW(tae.decode(Tensor::zeros({1, 16, 4, 4})), Error);
}

// Loading `p` fails with one error naming `tensor`.
void expect_load_error(const Params& p, const std::string& name, const std::string& tensor) {
    ModelFiles files;
    files.add(write_params(p, name), ModelRole::Checkpoint);
    try {
        Taesd::load(Weights(files, ""), false);
        FAIL() << name << " loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(tensor), std::string::npos) << e.what();
    }
}

TEST(Taesd, NotATaesdIsOneError) {
    Params p = small_taesd(4, 4, false);
    p.erase("decoder.layers.0.weight");
    expect_load_error(p, "taesd_no_conv_in", "decoder.layers.0.weight");
    Params q = small_taesd(4, 4, false);
    q.erase("decoder.layers.13.conv.2.weight");
    expect_load_error(q, "taesd_missing_block", "decoder.layers.13.conv.2.weight");
}

}  // namespace
}  // namespace sd
