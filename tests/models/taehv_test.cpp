// TAEHV (Wan 2.1's and Wan 2.2's): decoder and encoder against an independent numpy forward of
// taehv.py (tests/models/taehv_reference.py) on random weights of the full structure, and
// files that are not a TAEHV.
#include "models/taehv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "io/model_files.h"
#include "models/numpy_reference.h"
#include "models/tiny_taehv.h"
#include "test_util.h"

namespace sd {
namespace {

struct Loaded {
    ModelFiles files;  // mapped while the model lives
    Taehv tae;
};

Loaded load(const std::string& path, bool with_encoder) {
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    Taehv tae = Taehv::load(Weights(files, ""), with_encoder);
    return {std::move(files), std::move(tae)};
}

class TaehvTest : public testing::TestWithParam<int64_t> {};  // latent channels: 16, 48

TEST_P(TaehvTest, DecoderMatchesNumpy) {
    const int64_t z = GetParam(), patch = z == 48 ? 2 : 1;
    const std::string path = test::tiny_taehv(z, false, "taehv_dec_" + std::to_string(z));
    const Loaded m = load(path, false);
    EXPECT_EQ(m.tae.config().latent_channels, z);
    EXPECT_EQ(m.tae.config().patch, patch);
    // Two latent frames make five, 8 p times the latent's sides.
    const Tensor latent = test::random_tensor({2, z, 3, 4}, 31, -3.0f, 3.0f);
    const Tensor got = m.tae.decode(latent);
    const Shape want_shape = {5, 3, 24 * patch, 32 * patch};
    ASSERT_EQ(got.shape(), want_shape);
    const Tensor want = test::numpy_reference("taehv_reference.py", path, {{"latent", latent}},
                                              want_shape, "taehv_dec_" + std::to_string(z));
    const double scale =
        std::max(1e-3, static_cast<double>(test::compare(want, want * 0.0f).max_abs));
    const double diff = test::compare(got, want).max_abs;
    std::printf("TAEHV z=%lld decode: max |diff| %.3g of max |out| %.3g\n", (long long)z, diff,
                scale);
    EXPECT_LT(diff, 1e-4 * scale);
}

TEST_P(TaehvTest, EncoderMatchesNumpy) {
    const int64_t z = GetParam(), patch = z == 48 ? 2 : 1;
    const std::string path = test::tiny_taehv(z, true, "taehv_enc_" + std::to_string(z));
    const Loaded m = load(path, true);
    ASSERT_TRUE(m.tae.has_encoder());
    // Five frames (1 + 4) are padded to eight with the last: two latent frames.
    const int64_t H = 16 * patch, W = 24 * patch;
    const Tensor frames = test::random_tensor({5, 3, H, W}, 32, 0.0f, 1.0f);
    const Tensor got = m.tae.encode(frames);
    const Shape want_shape = {2, z, H / (8 * patch), W / (8 * patch)};
    ASSERT_EQ(got.shape(), want_shape);
    const Tensor want = test::numpy_reference("taehv_reference.py", path, {{"frames", frames}},
                                              want_shape, "taehv_enc_" + std::to_string(z));
    const double scale =
        std::max(1e-3, static_cast<double>(test::compare(want, want * 0.0f).max_abs));
    const double diff = test::compare(got, want).max_abs;
    std::printf("TAEHV z=%lld encode: max |diff| %.3g of max |out| %.3g\n", (long long)z, diff,
                scale);
    EXPECT_LT(diff, 1e-4 * scale);
}

INSTANTIATE_TEST_SUITE_P(Wan, TaehvTest, testing::Values(16, 48),
                         [](const testing::TestParamInfo<int64_t>& i) {
                             return i.param == 16 ? "Wan21" : "Wan22";
                         });

TEST(Taehv, FilesThatAreNotATaehvAreNamed) {
    // A TAESD's names, and a TAEHV without its encoder asked to encode.
    std::map<std::string, Tensor> taesd = {
        {"decoder.layers.0.weight", test::random_tensor({64, 4, 3, 3}, 1)}};
    ModelFiles files;
    files.add(test::write_f32_safetensors(taesd, "taehv_not"), ModelRole::Checkpoint);
    EXPECT_FALSE(Taehv::is_taehv(Weights(files, "")));
    EXPECT_NE(
        test::error_of([&] { Taehv::load(Weights(files, ""), false); }).find("no TAEHV decoder"),
        std::string::npos);
    const Loaded m = load(test::tiny_taehv(16, false, "taehv_no_enc"), false);
    EXPECT_NE(test::error_of([&] {
                  m.tae.encode(Tensor::zeros({1, 3, 8, 8}));
              }).find("without its encoder"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] {
                  m.tae.decode(Tensor::zeros({1, 4, 2, 2}));
              }).find("expected [T, 16, h, w]"),
              std::string::npos);
}

}  // namespace
}  // namespace sd
