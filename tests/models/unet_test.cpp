// The UNet reads its layout from the weights: SDXL's depths (0/2/10 by level, 10 in the
// middle), an SSD-1B-style UNet with fewer transformer blocks in some blocks, and a
// Vega-style one without middle-block attention. The layouts are full-size SDXL manifests
// written as sparse files (tests/tools/write_sparse_checkpoint.py), so nothing is generated.
#include "models/unet.h"

#include <gtest/gtest.h>

#include "fixture_files.h"
#include "test_util.h"

namespace sd {
namespace {

UNet load_sparse_sdxl(const std::string& name, const std::string& options, ModelFiles& files) {
    const std::string path = test::temp_path(name + ".safetensors");
    test::run_or_fail("/usr/bin/python3 " + std::string(SD_TESTS_SOURCE_DIR) +
                      "/tools/write_sparse_checkpoint.py " + test::fixtures_dir() +
                      "/manifests/sdxl.tsv " + path + " " + options);
    files.add(path, ModelRole::Checkpoint);
    return UNet::load(Weights(files, "model.diffusion_model."));
}

TEST(UNet, SdxlLayoutFromTheWeights) {
    ModelFiles files;
    UNet unet = load_sparse_sdxl("unet_sdxl", "", files);
    const UNetConfig& c = unet.config();
    EXPECT_EQ(c.model_channels, 320);
    EXPECT_EQ(c.channel_mult, (std::vector<int64_t>{1, 2, 4}));
    EXPECT_EQ(c.attention_at_level, (std::vector<bool>{false, true, true}));
    EXPECT_EQ(c.num_res_blocks, 2);
    EXPECT_EQ(c.context_dim, 2048);
    EXPECT_EQ(c.adm_in_channels, 2816);
    EXPECT_TRUE(c.linear_projection);
    // input 4, 5 (2 each), 7, 8 (10 each); middle 10; output 0-2 (10), 3-5 (2).
    EXPECT_EQ(unet.transformer_depths(), (std::vector<int>{2, 2, 10, 10, 10, 10, 10, 10, 2, 2, 2}));
}

TEST(UNet, DistilledSdxlLayoutsLoadAndRun) {
    // SSD-1B style: blocks with fewer transformer blocks; Vega style: no middle attention.
    std::string drop = "--drop-prefix model.diffusion_model.middle_block.1.";
    for (int b = 2; b < 10; ++b) {
        drop += " --drop-prefix model.diffusion_model.input_blocks.8.1.transformer_blocks." +
                std::to_string(b) + ".";
    }
    // The middle block's second ResBlock keeps its name (middle_block.2).
    ModelFiles files;
    UNet unet = load_sparse_sdxl("unet_distilled", drop, files);
    EXPECT_EQ(unet.transformer_depths(), (std::vector<int>{2, 2, 10, 2, 10, 10, 10, 2, 2, 2}));
    // The zero weights give a finite output of the input's shape.
    Tensor x = Tensor::full({1, 4, 8, 8}, 0.5f);
    Tensor y = unet.forward(x, Tensor::full({1}, 500.0f), Tensor::zeros({1, 77, 2048}),
                            Tensor::zeros({1, 2816}));
    EXPECT_EQ(y.shape(), x.shape());
    for (float v : y.to_vector()) ASSERT_TRUE(std::isfinite(v));
}

TEST(UNet, MissingVectorIsAnError) {
    ModelFiles files;
    UNet unet = load_sparse_sdxl("unet_no_y", "", files);
    EXPECT_THROW(unet.forward(Tensor::full({1, 4, 8, 8}, 0.5f), Tensor::full({1}, 500.0f),
                              Tensor::zeros({1, 77, 2048})),
                 Error);
}

}  // namespace
}  // namespace sd
