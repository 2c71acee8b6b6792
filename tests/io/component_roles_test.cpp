// The component role table (io/component_roles.h): each role named once, its prefixes,
// which role a canonical or checkpoint name belongs to, and what a file's names say it holds.
#include "io/component_roles.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "io/name_conversion.h"

namespace sd {
namespace {

std::vector<TensorRecord> records(std::initializer_list<const char*> names) {
    std::vector<TensorRecord> out;
    for (const char* n : names) {
        TensorRecord r;
        r.name = n;
        r.dtype = DType::F32;
        r.shape = Shape{2};
        r.strides = {1};
        out.push_back(r);
    }
    return out;
}

TEST(ComponentRoles, EachRoleIsNamedOnce) {
    ASSERT_EQ(component_roles().size(), kModelRoleCount);
    std::set<std::string> names, options, fields, prefixes;
    for (size_t i = 0; i < component_roles().size(); ++i) {
        const ComponentRole& r = component_roles()[i];
        SCOPED_TRACE(r.option);
        EXPECT_EQ(static_cast<size_t>(r.role), i);
        EXPECT_EQ(&component_role(r.role), &r);
        EXPECT_TRUE(names.insert(r.name).second);
        EXPECT_TRUE(options.insert(r.option).second);
        if (r.old_option[0]) {
            EXPECT_TRUE(options.insert(r.old_option).second);
        }
        if (r.short_option[0]) {
            EXPECT_TRUE(options.insert(r.short_option).second);
        }
        EXPECT_EQ(std::string(r.option).rfind("--", 0), 0u);
        EXPECT_TRUE(fields.insert(r.c_field).second);
        EXPECT_EQ(std::string(r.c_field).find("_path"), std::strlen(r.c_field) - 5);
        EXPECT_GT(std::strlen(r.help), 0u);
        if (r.role == ModelRole::Checkpoint) {
            EXPECT_STREQ(r.prefix, "");
            continue;
        }
        EXPECT_TRUE(prefixes.insert(r.prefix).second);
        EXPECT_EQ(std::string(r.prefix).back(), '.');
        EXPECT_STREQ(canonical_prefix(r.role), r.prefix);
        EXPECT_STREQ(model_role_name(r.role), r.name);
        // A name under the prefix belongs to the role (no other role claims it whole).
        EXPECT_EQ(role_of_name(std::string(r.prefix) + "x.weight"), r.role);
        for (const char* alias : r.aliases) EXPECT_EQ(std::string(alias).back(), '.');
    }
}

TEST(ComponentRoles, TheLongestPrefixDecides) {
    EXPECT_EQ(role_of_name("text_encoders.llm.model.layers.0.mlp.up_proj.weight"), ModelRole::Llm);
    EXPECT_EQ(role_of_name("text_encoders.llm.visual.blocks.0.attn.qkv.weight"),
              ModelRole::LlmVision);
    EXPECT_EQ(role_of_name("cond_stage_model.transformer.text_model.final_layer_norm.weight"),
              ModelRole::TextEncoder);
    EXPECT_EQ(role_of_name("cond_stage_model.transformer.vision_model.post_layernorm.weight"),
              ModelRole::ClipVision);
    EXPECT_EQ(role_of_name("cond_stage_model.1.transformer.text_projection.weight"),
              ModelRole::TextEncoder2);
    EXPECT_EQ(role_of_name("model.diffusion_model.uncond.x.weight"),
              ModelRole::UncondDiffusionModel);
    EXPECT_EQ(role_of_name("model.diffusion_model.out.2.weight"), ModelRole::DiffusionModel);
    EXPECT_EQ(role_of_name("model_ema.decay"), ModelRole::Checkpoint);
}

TEST(ComponentRoles, CheckpointNamesSplitIntoComponents) {
    auto split = [](const char* name) {
        ModelRole role = ModelRole::Checkpoint;
        std::string_view rest;
        if (!split_component_name(name, role, rest)) return std::string("none");
        return std::string(model_role_name(role)) + " | " + std::string(rest);
    };
    EXPECT_EQ(split("model.diffusion_model.out.2.weight"), "diffusion model | out.2.weight");
    EXPECT_EQ(split("cond_stage_model.model.ln_final.weight"),
              "CLIP-L text encoder | ln_final.weight");
    EXPECT_EQ(split("conditioner.embedders.1.model.text_projection"),
              "OpenCLIP bigG text encoder | text_projection");
    EXPECT_EQ(split("text_encoders.clip_g.transformer.text_model.x"),
              "OpenCLIP bigG text encoder | text_model.x");
    // The canonical prefix of the second text encoder comes before the first's alias
    // cond_stage_model.: a converted SDXL file reads back as written.
    EXPECT_EQ(split("cond_stage_model.1.transformer.text_model.x"),
              "OpenCLIP bigG text encoder | text_model.x");
    EXPECT_EQ(split("vae.decoder.conv_in.weight"), "VAE | decoder.conv_in.weight");
    EXPECT_EQ(split("text_encoders.llm.visual.merger.mlp.0.weight"),
              "LLM vision encoder | merger.mlp.0.weight");
    EXPECT_EQ(split("model_ema.decay"), "none");
    EXPECT_EQ(
        strip_role_prefix("conditioner.embedders.1.model.ln_final.weight", ModelRole::TextEncoder2),
        "ln_final.weight");
    EXPECT_EQ(strip_role_prefix("first_stage_model.encoder.conv_in.weight", ModelRole::Vae),
              "encoder.conv_in.weight");
    EXPECT_EQ(strip_role_prefix("encoder.conv_in.weight", ModelRole::T5), "encoder.conv_in.weight");
}

TEST(ComponentRoles, AFilesNamesSayWhatItHolds) {
    EXPECT_EQ(recognise_role(records({"input_blocks.0.0.weight"})), ModelRole::DiffusionModel);
    EXPECT_EQ(recognise_role(records({"double_blocks.0.img_attn.qkv.weight"})),
              ModelRole::DiffusionModel);
    EXPECT_EQ(recognise_role(records({"decoder.conv_in.weight", "encoder.conv_in.weight"})),
              ModelRole::Vae);
    EXPECT_EQ(recognise_role(records({"text_model.final_layer_norm.weight"})),
              ModelRole::TextEncoder);
    EXPECT_EQ(recognise_role(
                  records({"shared.weight", "encoder.block.0.layer.0.SelfAttention.q.weight"})),
              ModelRole::T5);
    EXPECT_EQ(
        recognise_role(records({"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight"})),
        ModelRole::Llm);
    EXPECT_EQ(recognise_role(records({"vision_model.post_layernorm.weight"})),
              ModelRole::ClipVision);
    // A name of a whole model's layout makes the file a checkpoint, whatever else it has.
    EXPECT_EQ(recognise_role(records({"input_blocks.0.0.weight", "first_stage_model.x"})),
              ModelRole::Checkpoint);
    EXPECT_EQ(recognise_role(records({"conditioner.embedders.0.transformer.x"})),
              ModelRole::Checkpoint);
    EXPECT_EQ(recognise_role(records({"foo.weight"})), ModelRole::Checkpoint);
    // A diffusers folder several roles list goes to the one whose names the file has.
    const ModelRole second[] = {ModelRole::TextEncoder2, ModelRole::T5};
    EXPECT_EQ(pick_role(second, records({"encoder.block.0.layer.1.DenseReluDense.wo.weight"})),
              ModelRole::T5);
    EXPECT_EQ(pick_role(second, records({"text_model.final_layer_norm.weight"})),
              ModelRole::TextEncoder2);
    EXPECT_EQ(pick_role(second, records({"foo.weight"})), ModelRole::TextEncoder2);
}

// Roles without a converter of their own keep the file's names under their prefix; the
// known ones are converted as before.
TEST(ComponentRoles, CanonicalNamesOfEachRole) {
    auto names = [](std::vector<TensorRecord> r, ModelRole role) {
        std::vector<std::string> out;
        for (const TensorRecord& t : to_canonical_names(std::move(r), role)) out.push_back(t.name);
        return out;
    };
    EXPECT_EQ(names(records({"model.layers.0.mlp.up_proj.weight"}), ModelRole::Llm),
              std::vector<std::string>{"text_encoders.llm.model.layers.0.mlp.up_proj.weight"});
    EXPECT_EQ(names(records({"model.layers.0.mlp.up_proj.weight", "visual.blocks.0.norm1.weight"}),
                    ModelRole::Checkpoint),
              (std::vector<std::string>{"text_encoders.llm.model.layers.0.mlp.up_proj.weight",
                                        "text_encoders.llm.visual.blocks.0.norm1.weight"}));
    EXPECT_EQ(
        names(records({"vision_model.encoder.layers.0.mlp.fc1.weight"}), ModelRole::ClipVision),
        std::vector<std::string>{
            "cond_stage_model.transformer.vision_model.encoder.layers.0.mlp.fc1.weight"});
    EXPECT_EQ(names(records({"x.weight"}), ModelRole::AudioVae),
              std::vector<std::string>{"audio_vae.x.weight"});
    EXPECT_EQ(names(records({"cond_stage_model.1.transformer.text_model.final_layer_norm.weight",
                             "model.diffusion_model.out.2.weight"}),
                    ModelRole::Checkpoint),
              (std::vector<std::string>{
                  "cond_stage_model.1.transformer.text_model.final_layer_norm.weight",
                  "model.diffusion_model.out.2.weight"}));
    EXPECT_EQ(
        names(records({"conditioner.embedders.1.model.ln_final.weight"}), ModelRole::TextEncoder2),
        std::vector<std::string>{
            "cond_stage_model.1.transformer.text_model.final_layer_norm.weight"});
}

}  // namespace
}  // namespace sd
