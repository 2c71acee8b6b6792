// Reading LoRA files of every format into modules, and the bad files.
#include "adapters/lora_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "adapters/lora_test_util.h"
#include "io/io_test_util.h"

namespace sd {
namespace {

using test::random_tensor;
using test::scalar_tensor;
using test::write_tensors;

const LoraModule& module_of(const LoraFile& f, const std::string& key) {
    for (const LoraModule& m : f.modules)
        if (m.key == key) return m;
    ADD_FAILURE() << "no module " << key;
    return f.modules.front();
}

TEST(LoraFile, KohyaPartsAndAlpha) {
    const std::string path = write_tensors(
        "kohya.safetensors",
        {{"lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight",
          random_tensor({4, 8, 1, 1}, 1)},
         {"lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight",
          random_tensor({8, 4, 1, 1}, 2)},
         {"lora_unet_down_blocks_0_attentions_0_proj_in.alpha", scalar_tensor(2.0f)},
         {"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_down.weight", random_tensor({4, 6}, 3)},
         {"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_up.weight", random_tensor({12, 4}, 4)},
         {"something_else", random_tensor({3}, 5)}},
        DType::F16);
    const LoraFile f = read_lora_file(path);
    EXPECT_EQ(f.tensor_count, 6u);
    ASSERT_EQ(f.modules.size(), 2u);
    ASSERT_EQ(f.unknown.size(), 1u);
    const LoraModule& m = module_of(f, "lora_unet_down_blocks_0_attentions_0_proj_in");
    EXPECT_EQ(m.kind(), LoraKind::LowRank);
    EXPECT_EQ(m.tensor_count, 3u);
    EXPECT_EQ(m.part("down").dtype(), DType::F32);
    EXPECT_EQ(m.part("down").shape(), Shape({4, 8, 1, 1}));
    EXPECT_FLOAT_EQ(m.part("alpha").to_vector()[0], 2.0f);
    std::filesystem::remove(path);
}

TEST(LoraFile, PeftDiffusersAndProcessorNames) {
    std::string key, part;
    ASSERT_TRUE(
        split_lora_name("unet.down_blocks.0.attentions.0.proj_in.lora_A.weight", key, part));
    EXPECT_EQ(key, "unet.down_blocks.0.attentions.0.proj_in");
    EXPECT_EQ(part, "down");
    ASSERT_TRUE(split_lora_name("text_encoder.text_model.encoder.layers.0.mlp.fc1.lora_B.weight",
                                key, part));
    EXPECT_EQ(part, "up");
    ASSERT_TRUE(split_lora_name("unet.mid_block.attentions.0.proj_in.lora.up.weight", key, part));
    EXPECT_EQ(key, "unet.mid_block.attentions.0.proj_in");
    EXPECT_EQ(part, "up");
    ASSERT_TRUE(
        split_lora_name("unet.down_blocks.0.attentions.0.transformer_blocks.0.attn1.processor.to_q_"
                        "lora.down.weight",
                        key, part));
    EXPECT_EQ(key, "unet.down_blocks.0.attentions.0.transformer_blocks.0.attn1.processor.to_q");
    EXPECT_EQ(part, "down");
    ASSERT_TRUE(split_lora_name("lora_unet_x.dora_scale", key, part));
    EXPECT_EQ(part, "dora_scale");
    EXPECT_FALSE(split_lora_name("model.diffusion_model.out.2.weight", key, part));
}

TEST(LoraFile, LycorisKinds) {
    const std::string path = write_tensors(
        "lycoris.safetensors", {{"lora_unet_a.hada_w1_a", random_tensor({8, 2}, 1)},
                                {"lora_unet_a.hada_w1_b", random_tensor({2, 6}, 2)},
                                {"lora_unet_a.hada_w2_a", random_tensor({8, 2}, 3)},
                                {"lora_unet_a.hada_w2_b", random_tensor({2, 6}, 4)},
                                {"lora_unet_a.alpha", scalar_tensor(1.0f)},
                                {"lora_unet_b.lokr_w1", random_tensor({2, 2}, 5)},
                                {"lora_unet_b.lokr_w2_a", random_tensor({4, 2}, 6)},
                                {"lora_unet_b.lokr_w2_b", random_tensor({2, 3}, 7)},
                                {"lora_unet_c.diff", random_tensor({4, 4}, 8)},
                                {"lora_unet_d.lora_up.weight", random_tensor({4, 4}, 9)}});
    const LoraFile f = read_lora_file(path);
    EXPECT_EQ(module_of(f, "lora_unet_a").kind(), LoraKind::LoHa);
    EXPECT_EQ(module_of(f, "lora_unet_b").kind(), LoraKind::LoKr);
    EXPECT_EQ(module_of(f, "lora_unet_c").kind(), LoraKind::Diff);
    EXPECT_EQ(module_of(f, "lora_unet_d").kind(), LoraKind::Incomplete);
    std::filesystem::remove(path);
}

TEST(LoraFile, GgufHoldsTheSameValues) {
    const Tensor down = random_tensor({4, 8}, 11), up = random_tensor({8, 4}, 12);
    const test::NamedTensors t = {
        {"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_down.weight", down},
        {"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_up.weight", up}};
    const std::string st = write_tensors("same.safetensors", t), gg = write_tensors("same.gguf", t);
    const LoraFile a = read_lora_file(st), b = read_lora_file(gg);
    EXPECT_EQ(b.format, "gguf");
    ASSERT_EQ(a.modules.size(), 1u);
    ASSERT_EQ(b.modules.size(), 1u);
    EXPECT_EQ(a.modules[0].part("down").to_vector(), b.modules[0].part("down").to_vector());
    EXPECT_EQ(a.modules[0].part("up").shape(), b.modules[0].part("up").shape());
    std::filesystem::remove(st);
    std::filesystem::remove(gg);
}

TEST(LoraFile, TruncatedMissingAndForeignFilesAreErrors) {
    const std::string path = write_tensors(
        "trunc.safetensors", {{"lora_unet_a.lora_down.weight", random_tensor({64, 64}, 1)},
                              {"lora_unet_a.lora_up.weight", random_tensor({64, 64}, 2)}});
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
    EXPECT_ERROR_CONTAINS(read_lora_file(path), "trunc.safetensors");
    EXPECT_ERROR_CONTAINS(check_lora_file(path), "trunc.safetensors");
    EXPECT_ERROR_CONTAINS(read_lora_file(path + ".missing"), ".missing");
    const std::string model =
        write_tensors("model.safetensors", {{"a.weight", random_tensor({2, 2}, 3)}});
    EXPECT_ERROR_CONTAINS(check_lora_file(model), "no LoRA tensors");
    std::filesystem::remove(path);
    std::filesystem::remove(model);
}

}  // namespace
}  // namespace sd
