// ControlNet: the layout read from a full-size SD 1.5 ControlNet manifest, its residuals
// against the SD 1.5 UNet's skips, a forward whose values are worked out by hand, and the
// files that are not a ControlNet for the model. The files are sparse (zero weights but for
// the tensors a test fills), written by tests/tools/write_sparse_checkpoint.py.
#include "models/controlnet.h"

#include <gtest/gtest.h>

#include "families/parts/unet.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "test_util.h"

namespace sd {
namespace {

std::string sparse_file(const std::string& manifest, const std::string& name,
                        const std::string& options = "") {
    const std::string path = test::temp_path(name + ".safetensors");
    test::run_or_fail("/usr/bin/python3 " + std::string(SD_TESTS_SOURCE_DIR) +
                      "/tools/write_sparse_checkpoint.py " + test::fixtures_dir() + "/manifests/" +
                      manifest + ".tsv " + path + " " + options);
    return path;
}

ControlNet load_control_net_file(const std::string& path, ModelFiles& files) {
    files.add(path, ModelRole::Checkpoint);
    return ControlNet::load(Weights(files, "control_model."));
}

// A model's latent size at each input block of SD 1.5 (levels of 3, 3, 3 and 2 blocks).
std::vector<int64_t> skip_sizes(int64_t latent) {
    return {latent,     latent,     latent,     latent / 2, latent / 2, latent / 2, latent / 4,
            latent / 4, latent / 4, latent / 8, latent / 8, latent / 8, latent / 8};
}

TEST(ControlNet, Sd15LayoutFromTheWeights) {
    ModelFiles files;
    ControlNet net = load_control_net_file(sparse_file("controlnet_sd15", "cn_layout"), files);
    const UNetConfig& c = net.config();
    EXPECT_EQ(c.model_channels, 320);
    EXPECT_EQ(c.in_channels, 4);
    EXPECT_EQ(c.channel_mult, (std::vector<int64_t>{1, 2, 4, 4}));
    EXPECT_EQ(c.attention_at_level, (std::vector<bool>{true, true, true, false}));
    EXPECT_EQ(c.context_dim, 768);
    EXPECT_EQ(net.hint_channels(), 3);
    EXPECT_EQ(net.residual_channels(), (std::vector<int64_t>{320, 320, 320, 320, 640, 640, 640,
                                                             1280, 1280, 1280, 1280, 1280, 1280}));
}

TEST(ControlNet, ResidualsMatchTheUNetSkips) {
    ModelFiles unet_files;
    unet_files.add(sparse_file("sd15", "cn_unet"), ModelRole::Checkpoint);
    UNet unet = UNet::load(Weights(unet_files, "model.diffusion_model."));
    ModelFiles files;
    ControlNet net = load_control_net_file(sparse_file("controlnet_sd15", "cn_skips"), files);
    EXPECT_EQ(net.residual_channels(), unet.control_channels());

    const int64_t latent = 16;
    Tensor hint = net.encode_hint(Tensor::full({1, 3, latent * 8, latent * 8}, 0.5f));
    EXPECT_EQ(hint.shape(), (Shape{1, 320, latent, latent}));
    Tensor x = Tensor::full({1, 4, latent, latent}, 0.1f);
    std::vector<Tensor> res =
        net.forward(x, Tensor::full({1}, 500.0f), Tensor::zeros({1, 77, 768}), {}, hint);
    const std::vector<int64_t> channels = unet.control_channels();
    const std::vector<int64_t> sizes = skip_sizes(latent);
    ASSERT_EQ(res.size(), channels.size());
    for (size_t i = 0; i < res.size(); ++i) {
        const int64_t size = i + 1 < res.size() ? sizes[i] : latent / 8;
        EXPECT_EQ(res[i].shape(), (Shape{1, channels[i], size, size})) << "residual " << i;
    }
    // The UNet takes them (all zero here: the weights are) and gives its output's shape.
    UNetControl control{res, 0.9f};
    Tensor y =
        unet.forward(x, Tensor::full({1}, 500.0f), Tensor::zeros({1, 77, 768}), {}, &control);
    EXPECT_EQ(y.shape(), x.shape());
    control.residuals.pop_back();
    EXPECT_THROW(
        unet.forward(x, Tensor::full({1}, 500.0f), Tensor::zeros({1, 77, 768}), {}, &control),
        Error);
}

// With zero weights every ResBlock and transformer passes its input through (their outputs
// are added to it) and a Downsample gives 0; the filled biases and identity zero convs
// then give each residual a value worked out by hand.
TEST(ControlNet, ForwardWorkedOutByHand) {
    const std::string options =
        "--fill control_model.input_hint_block.14.bias=0.5 "  // the guided hint
        "--fill control_model.input_blocks.0.0.bias=0.25 "    // conv_in(x)
        "--eye control_model.zero_convs.0.0.weight "          // residual 0: h0 + 0.125
        "--fill control_model.zero_convs.0.0.bias=0.125 "     //
        "--eye control_model.zero_convs.1.0.weight "          // residual 1: h1 = h0
        "--fill control_model.zero_convs.2.0.bias=0.0625 "    // residual 2: its bias
        "--eye control_model.zero_convs.4.0.weight "          // after a Downsample: 0
        "--fill control_model.middle_block_out.0.bias=-0.5";  // the middle block's
    ModelFiles files;
    ControlNet net =
        load_control_net_file(sparse_file("controlnet_sd15", "cn_hand", options), files);
    const int64_t latent = 8;
    Tensor hint = net.encode_hint(test::random_tensor({1, 3, latent * 8, latent * 8}, 7, 0, 1));
    for (float v : hint.to_vector()) ASSERT_EQ(v, 0.5f);
    std::vector<Tensor> res =
        net.forward(test::random_tensor({1, 4, latent, latent}, 8), Tensor::full({1}, 999.0f),
                    test::random_tensor({1, 77, 768}, 9), {}, hint);
    ASSERT_EQ(res.size(), 13u);
    const std::vector<float> expected = {0.875f, 0.75f, 0.0625f, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.5f};
    for (size_t i = 0; i < res.size(); ++i) {
        for (float v : res[i].to_vector()) ASSERT_NEAR(v, expected[i], 1e-6f) << "residual " << i;
    }
}

// SDXL's layout (three levels, transformer depths 0/2/10, label_emb, linear projections)
// read from the weights: a ControlNet made from the SDXL manifest's UNet half
// (tests/models/sdxl_controlnet_manifest.py) fits the SDXL UNet's skips and runs with y.
TEST(ControlNet, SdxlLayoutFitsTheSdxlUNet) {
    const std::string dir = testing::TempDir();
    const std::string tools = std::string(SD_TESTS_SOURCE_DIR);
    test::run_or_fail("/usr/bin/python3 " + tools + "/models/sdxl_controlnet_manifest.py " +
                      test::fixtures_dir() + "/manifests/sdxl.tsv " + dir + "/sdxl_cn.tsv");
    test::run_or_fail("/usr/bin/python3 " + tools + "/tools/write_sparse_checkpoint.py " + dir +
                      "/sdxl_cn.tsv " + dir + "/sdxl_cn.safetensors");
    ModelFiles files;
    ControlNet net = load_control_net_file(dir + "/sdxl_cn.safetensors", files);
    const UNetConfig& c = net.config();
    EXPECT_EQ(c.channel_mult, (std::vector<int64_t>{1, 2, 4}));
    EXPECT_EQ(c.context_dim, 2048);
    EXPECT_EQ(c.adm_in_channels, 2816);
    EXPECT_TRUE(c.linear_projection);
    ModelFiles unet_files;
    unet_files.add(sparse_file("sdxl", "cn_sdxl_unet"), ModelRole::Checkpoint);
    UNet unet = UNet::load(Weights(unet_files, "model.diffusion_model."));
    EXPECT_EQ(net.residual_channels(), unet.control_channels());

    const int64_t latent = 8;
    Tensor hint = net.encode_hint(Tensor::full({1, 3, latent * 8, latent * 8}, 0.5f));
    std::vector<Tensor> res =
        net.forward(Tensor::full({1, 4, latent, latent}, 0.1f), Tensor::full({1}, 500.0f),
                    Tensor::zeros({1, 77, 2048}), Tensor::zeros({1, 2816}), hint);
    const std::vector<int64_t> sizes = {8, 8, 8, 4, 4, 4, 2, 2, 2, 2};
    ASSERT_EQ(res.size(), sizes.size());
    for (size_t i = 0; i < res.size(); ++i)
        EXPECT_EQ(res[i].shape(), (Shape{1, unet.control_channels()[i], sizes[i], sizes[i]}));
}

TEST(ControlNet, MissingTensorsAreNamed) {
    ModelFiles files;
    try {
        load_control_net_file(sparse_file("controlnet_sd15", "cn_missing",
                                          "--drop control_model.zero_convs.11.0.weight"),
                              files);
        FAIL() << "loaded a ControlNet without zero_convs.11";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("zero_convs.11.0.weight"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sd
