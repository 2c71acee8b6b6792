// The SD3 family on full-size layouts whose data is a hole (sparse files from the fixture
// manifests): SD3 medium, SD3.5 large (qk-norm) and SD3.5 medium (MMDiT-X attn2) told apart
// by their tensor names, and each missing text encoder named with the option that gives it.
#include <gtest/gtest.h>

#include "families/family_test_util.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "io/tensor_writer.h"
#include "test_util.h"

namespace sd {
namespace {

using test::sparse;

std::string variant_of(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return detect_family(files).variant;
}

TEST(Sd3Family, VariantsFromTheirTensorNames) {
    EXPECT_EQ(variant_of(sparse("sd3_medium", "sd3_plain")), "SD3 medium");
    const std::string ln_q =
        " --rename joint_blocks.0.x_block.attn.proj.bias=joint_blocks.0.x_block.attn.ln_q.weight";
    EXPECT_EQ(variant_of(sparse("sd3_medium", "sd35_large", ln_q)), "SD3.5 large");
    const std::string attn2 =
        " --rename joint_blocks.0.x_block.mlp.fc2.bias=joint_blocks.0.x_block.attn2.qkv.bias";
    EXPECT_EQ(variant_of(sparse("sd3_medium", "sd35_medium", ln_q + attn2)), "SD3.5 medium");
}

TEST(Sd3Family, MissingTextEncoderIsNamedWithItsOption) {
    const std::string mmdit = sparse("sd3_medium", "sd3_parts");
    const std::string vae = sparse("flux_ae", "sd3_ae_sparse");
    const std::string clip_l = sparse("clip_l", "sd3_clip_l_sparse");
    const std::string clip_g = sparse("clip_g", "sd3_clip_g_sparse");
    const std::string t5 = sparse("t5xxl_l2", "sd3_t5_sparse");
    struct Case {
        bool l, g, t;
        const char* option;
    };
    for (const Case& c : {Case{false, true, true, "--clip_l"}, Case{true, false, true, "--clip_g"},
                          Case{true, true, false, "--t5xxl"}}) {
        ModelFiles files;
        files.add(mmdit, ModelRole::DiffusionModel);
        files.add(vae, ModelRole::Vae);
        if (c.l) files.add(clip_l, ModelRole::TextEncoder);
        if (c.g) files.add(clip_g, ModelRole::TextEncoder2);
        if (c.t) files.add(t5, ModelRole::T5);
        const std::string error =
            test::error_of([&] { load_model(files, test::family_test_options()); });
        EXPECT_NE(error.find(c.option), std::string::npos) << error;
    }
}

// The all-in-one file's names (ComfyUI's SD3 checkpoints) reach the parts the family reads.
TEST(Sd3Family, AllInOneNamesAreCanonical) {
    const std::string path = test::temp_path("sd3_all_in_one.safetensors");
    auto tensor = [](const std::string& name) {
        return OutputTensor{name, DType::F32, Shape{2}, [] { return Tensor::zeros({2}); }};
    };
    write_safetensors(path,
                      {tensor("model.diffusion_model.joint_blocks.0.x_block.attn.qkv.bias"),
                       tensor("text_encoders.clip_l.transformer.text_model.final_layer_norm.bias"),
                       tensor("text_encoders.clip_g.transformer.text_model.final_layer_norm.bias"),
                       tensor("text_encoders.clip_g.transformer.text_projection.weight"),
                       tensor("text_encoders.t5xxl.transformer.shared.weight"),
                       tensor("first_stage_model.decoder.conv_in.bias")});
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    EXPECT_EQ(detect_family(files).variant, "SD3 medium");
    for (const char* name : {"cond_stage_model.transformer.text_model.final_layer_norm.bias",
                             "cond_stage_model.1.transformer.text_model.final_layer_norm.bias",
                             "cond_stage_model.1.transformer.text_projection.weight",
                             "text_encoders.t5xxl.transformer.shared.weight",
                             "first_stage_model.decoder.conv_in.bias"})
        EXPECT_NE(files.find(name), nullptr) << name;
}

}  // namespace
}  // namespace sd
