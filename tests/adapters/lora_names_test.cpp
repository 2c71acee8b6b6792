// LoRA module names of each trainer onto the canonical checkpoint names.
#include "adapters/lora_names.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sd {
namespace {

// The candidates' weight names.
std::vector<std::string> names(const std::string& key) {
    std::vector<std::string> out;
    for (const LoraPart& p : lora_target_candidates(key)) out.push_back(p.name);
    return out;
}

bool offers(const std::string& key, const std::string& name) {
    const std::vector<std::string> c = names(key);
    return std::find(c.begin(), c.end(), name) != c.end();
}

std::string first(const std::string& key) {
    return names(key).at(0);
}

// Whether `key` offers the weight `want` as the part (block, to_end, swap_halves) given.
bool part(const std::string& key, const std::string& want, int block = -1, bool to_end = false,
          bool swap_halves = false) {
    for (const LoraPart& p : lora_target_candidates(key))
        if (p.name == want)
            return p.block == block && p.to_end == to_end && p.swap_halves == swap_halves;
    return false;
}

TEST(LoraNames, KohyaUnderscoresBecomeDots) {
    EXPECT_EQ(kohya_to_dotted("down_blocks_0_attentions_1_transformer_blocks_0_attn1_to_out_0"),
              "down_blocks.0.attentions.1.transformer_blocks.0.attn1.to_out.0");
    EXPECT_EQ(kohya_to_dotted("text_model_encoder_layers_11_self_attn_q_proj"),
              "text_model.encoder.layers.11.self_attn.q_proj");
    EXPECT_EQ(kohya_to_dotted("input_blocks_4_0_in_layers_2"), "input_blocks.4.0.in_layers.2");
    EXPECT_EQ(kohya_to_dotted("mid_block_attentions_0_transformer_blocks_0_ff_net_0_proj"),
              "mid_block.attentions.0.transformer_blocks.0.ff.net.0.proj");
}

TEST(LoraNames, KohyaDiffusersLayoutMapsToLdm) {
    EXPECT_EQ(first("lora_unet_down_blocks_0_attentions_0_proj_in"),
              "model.diffusion_model.input_blocks.1.1.proj_in.weight");
    EXPECT_EQ(first("lora_unet_down_blocks_1_attentions_1_transformer_blocks_0_attn2_to_k"),
              "model.diffusion_model.input_blocks.5.1.transformer_blocks.0.attn2.to_k.weight");
    EXPECT_EQ(first("lora_unet_mid_block_attentions_0_transformer_blocks_0_ff_net_2"),
              "model.diffusion_model.middle_block.1.transformer_blocks.0.ff.net.2.weight");
    EXPECT_EQ(first("lora_unet_up_blocks_3_attentions_2_proj_out"),
              "model.diffusion_model.output_blocks.11.1.proj_out.weight");
    // conv LoRAs on resnets and samplers
    EXPECT_EQ(first("lora_unet_down_blocks_0_resnets_1_conv1"),
              "model.diffusion_model.input_blocks.2.0.in_layers.2.weight");
    EXPECT_EQ(first("lora_unet_down_blocks_0_downsamplers_0_conv"),
              "model.diffusion_model.input_blocks.3.0.op.weight");
    EXPECT_TRUE(offers("lora_unet_up_blocks_0_upsamplers_0_conv",
                       "model.diffusion_model.output_blocks.2.1.conv.weight"));
    EXPECT_TRUE(offers("lora_unet_up_blocks_1_upsamplers_0_conv",
                       "model.diffusion_model.output_blocks.5.2.conv.weight"));
    // LCM-LoRA (diffusers names under kohya's prefix) also adapts the resnets' projections
    EXPECT_EQ(first("lora_unet_down_blocks_1_resnets_0_time_emb_proj"),
              "model.diffusion_model.input_blocks.4.0.emb_layers.1.weight");
    EXPECT_EQ(first("lora_unet_down_blocks_1_resnets_0_conv_shortcut"),
              "model.diffusion_model.input_blocks.4.0.skip_connection.weight");
    EXPECT_EQ(first("lora_unet_conv_in"), "model.diffusion_model.input_blocks.0.0.weight");
    EXPECT_EQ(first("lora_unet_time_embedding_linear_1"),
              "model.diffusion_model.time_embed.0.weight");
}

TEST(LoraNames, KohyaLdmLayout) {
    EXPECT_EQ(first("lora_unet_input_blocks_1_1_proj_in"),
              "model.diffusion_model.input_blocks.1.1.proj_in.weight");
    EXPECT_EQ(first("lora_unet_output_blocks_5_0_skip_connection"),
              "model.diffusion_model.output_blocks.5.0.skip_connection.weight");
    EXPECT_EQ(first("lora_unet_middle_block_1_transformer_blocks_0_attn1_to_q"),
              "model.diffusion_model.middle_block.1.transformer_blocks.0.attn1.to_q.weight");
}

TEST(LoraNames, TextEncoders) {
    EXPECT_EQ(first("lora_te_text_model_encoder_layers_0_self_attn_q_proj"),
              "cond_stage_model.transformer.text_model.encoder.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(first("lora_te1_text_model_encoder_layers_3_mlp_fc2"),
              "cond_stage_model.transformer.text_model.encoder.layers.3.mlp.fc2.weight");
    EXPECT_EQ(
        first("lora_te2_text_model_encoder_layers_31_self_attn_out_proj"),
        "cond_stage_model.1.transformer.text_model.encoder.layers.31.self_attn.out_proj.weight");
    EXPECT_EQ(first("text_encoder.text_model.encoder.layers.0.self_attn.k_proj"),
              "cond_stage_model.transformer.text_model.encoder.layers.0.self_attn.k_proj.weight");
    EXPECT_EQ(first("text_encoder_2.text_model.encoder.layers.1.mlp.fc1"),
              "cond_stage_model.1.transformer.text_model.encoder.layers.1.mlp.fc1.weight");
}

TEST(LoraNames, DiffusersPeftAndLdmDottedNames) {
    EXPECT_EQ(first("unet.down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_q"),
              "model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn1.to_q.weight");
    EXPECT_EQ(first("base_model.model.down_blocks.2.attentions.0.proj_out"),
              "model.diffusion_model.input_blocks.7.1.proj_out.weight");
    EXPECT_EQ(first("unet.down_blocks.0.attentions.0.transformer_blocks.0.attn1.processor.to_out"),
              "model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn1.to_out.0.weight");
    EXPECT_EQ(first("model.diffusion_model.input_blocks.1.1.proj_in"),
              "model.diffusion_model.input_blocks.1.1.proj_in.weight");
    EXPECT_EQ(first("diffusion_model.out.2"), "model.diffusion_model.out.2.weight");
}

// Wan LoRAs: ComfyUI's / lightx2v's dotted keys and musubi-tuner's kohya ones.
TEST(LoraNames, WanDitKeys) {
    EXPECT_EQ(first("diffusion_model.blocks.3.cross_attn.k"),
              "model.diffusion_model.blocks.3.cross_attn.k.weight");
    EXPECT_EQ(first("lora_unet_blocks_3_cross_attn_k"),
              "model.diffusion_model.blocks.3.cross_attn.k.weight");
    EXPECT_EQ(first("lora_unet_blocks_0_self_attn_o"),
              "model.diffusion_model.blocks.0.self_attn.o.weight");
    EXPECT_EQ(first("lora_unet_blocks_12_ffn_2"), "model.diffusion_model.blocks.12.ffn.2.weight");
    EXPECT_EQ(first("lora_unet_blocks_1_cross_attn_k_img"),
              "model.diffusion_model.blocks.1.cross_attn.k_img.weight");
    EXPECT_EQ(first("lora_unet_time_projection_1"),
              "model.diffusion_model.time_projection.1.weight");
    EXPECT_EQ(first("lora_unet_text_embedding_0"), "model.diffusion_model.text_embedding.0.weight");
    EXPECT_EQ(first("lora_unet_img_emb_proj_1"), "model.diffusion_model.img_emb.proj.1.weight");
    EXPECT_EQ(first("lora_unet_head_head"), "model.diffusion_model.head.head.weight");
}

// Diffusers' WanTransformer3DModel names (finetrainers / diffusers LoRAs): the original Wan
// name is a candidate after the path as it is.
TEST(LoraNames, WanDiffusersKeys) {
    auto has = [](const std::string& key, const std::string& want) {
        const std::vector<std::string> c = names(key);
        return std::find(c.begin(), c.end(), want) != c.end();
    };
    const std::string dm = "model.diffusion_model.";
    EXPECT_TRUE(has("transformer.blocks.3.attn1.to_q", dm + "blocks.3.self_attn.q.weight"));
    EXPECT_TRUE(has("transformer.blocks.3.attn1.to_out.0", dm + "blocks.3.self_attn.o.weight"));
    EXPECT_TRUE(has("diffusion_model.blocks.0.attn2.to_k", dm + "blocks.0.cross_attn.k.weight"));
    EXPECT_TRUE(
        has("transformer.blocks.7.attn2.add_k_proj", dm + "blocks.7.cross_attn.k_img.weight"));
    EXPECT_TRUE(has("transformer.blocks.12.ffn.net.0.proj", dm + "blocks.12.ffn.0.weight"));
    EXPECT_TRUE(has("transformer.blocks.12.ffn.net.2", dm + "blocks.12.ffn.2.weight"));
    EXPECT_TRUE(has("transformer.condition_embedder.time_proj", dm + "time_projection.1.weight"));
    EXPECT_TRUE(has("transformer.condition_embedder.text_embedder.linear_1",
                    dm + "text_embedding.0.weight"));
    EXPECT_TRUE(has("transformer.proj_out", dm + "head.head.weight"));
    EXPECT_TRUE(has("lora_unet_blocks_2_attn1_to_v", dm + "blocks.2.self_attn.v.weight"));
    // A UNet's attention keeps its own reading alone.
    for (const std::string& c :
         names("unet.down_blocks.1.attentions.0.transformer_blocks.0.attn1.to_q"))
        EXPECT_EQ(c.find("self_attn"), std::string::npos) << c;
}

// FLUX.1 / FLUX.2 / Chroma: kohya's keys (sd-scripts' FLUX LoRAs) and BFL's dotted names.
TEST(LoraNames, FluxKohyaKeys) {
    const std::string dm = "model.diffusion_model.";
    EXPECT_EQ(first("lora_unet_double_blocks_0_img_attn_qkv"),
              dm + "double_blocks.0.img_attn.qkv.weight");
    EXPECT_EQ(first("lora_unet_double_blocks_18_txt_attn_proj"),
              dm + "double_blocks.18.txt_attn.proj.weight");
    EXPECT_EQ(first("lora_unet_double_blocks_3_img_mlp_2"),
              dm + "double_blocks.3.img_mlp.2.weight");
    EXPECT_EQ(first("lora_unet_double_blocks_3_txt_mod_lin"),
              dm + "double_blocks.3.txt_mod.lin.weight");
    EXPECT_EQ(first("lora_unet_single_blocks_37_linear1"), dm + "single_blocks.37.linear1.weight");
    EXPECT_EQ(first("lora_unet_single_blocks_0_modulation_lin"),
              dm + "single_blocks.0.modulation.lin.weight");
    EXPECT_EQ(first("lora_unet_final_layer_adaLN_modulation_1"),
              dm + "final_layer.adaLN_modulation.1.weight");
    EXPECT_EQ(first("lora_unet_time_in_in_layer"), dm + "time_in.in_layer.weight");
    EXPECT_EQ(first("lora_unet_guidance_in_out_layer"), dm + "guidance_in.out_layer.weight");
    EXPECT_EQ(first("lora_unet_txt_in"), dm + "txt_in.weight");
    EXPECT_EQ(first("lora_unet_double_stream_modulation_img_lin"),
              dm + "double_stream_modulation_img.lin.weight");
    EXPECT_EQ(first("lora_unet_single_stream_modulation_lin"),
              dm + "single_stream_modulation.lin.weight");
    EXPECT_EQ(first("diffusion_model.double_blocks.1.img_attn.qkv"),
              dm + "double_blocks.1.img_attn.qkv.weight");
}

// Diffusers' FluxTransformer2DModel / Flux2Transformer2DModel names: BFL's weight, whole or
// the block of a fused one (to_q / to_k / to_v thirds of qkv, FLUX.1's proj_mlp the rest of
// linear1).
TEST(LoraNames, FluxDiffusersKeys) {
    const std::string dm = "model.diffusion_model.";
    EXPECT_TRUE(part("transformer.transformer_blocks.2.attn.to_q",
                     dm + "double_blocks.2.img_attn.qkv.weight", 0));
    EXPECT_TRUE(part("transformer.transformer_blocks.2.attn.to_v",
                     dm + "double_blocks.2.img_attn.qkv.weight", 2));
    EXPECT_TRUE(part("transformer.transformer_blocks.0.attn.add_k_proj",
                     dm + "double_blocks.0.txt_attn.qkv.weight", 1));
    EXPECT_TRUE(part("transformer.transformer_blocks.0.attn.to_out.0",
                     dm + "double_blocks.0.img_attn.proj.weight"));
    EXPECT_TRUE(part("transformer.transformer_blocks.0.attn.to_add_out",
                     dm + "double_blocks.0.txt_attn.proj.weight"));
    EXPECT_TRUE(part("transformer.transformer_blocks.1.ff.net.0.proj",
                     dm + "double_blocks.1.img_mlp.0.weight"));
    EXPECT_TRUE(part("transformer.transformer_blocks.1.ff_context.net.2",
                     dm + "double_blocks.1.txt_mlp.2.weight"));
    EXPECT_TRUE(part("transformer.transformer_blocks.1.norm1_context.linear",
                     dm + "double_blocks.1.txt_mod.lin.weight"));
    EXPECT_TRUE(part("transformer.transformer_blocks.2.ff.linear_in",
                     dm + "double_blocks.2.img_mlp.0.weight"));
    EXPECT_TRUE(part("transformer.transformer_blocks.2.ff_context.linear_out",
                     dm + "double_blocks.2.txt_mlp.2.weight"));
    EXPECT_TRUE(part("transformer.single_transformer_blocks.5.attn.to_k",
                     dm + "single_blocks.5.linear1.weight", 1));
    EXPECT_TRUE(part("transformer.single_transformer_blocks.5.proj_mlp",
                     dm + "single_blocks.5.linear1.weight", 3, true));
    EXPECT_TRUE(part("transformer.single_transformer_blocks.5.proj_out",
                     dm + "single_blocks.5.linear2.weight"));
    EXPECT_TRUE(part("transformer.single_transformer_blocks.5.norm.linear",
                     dm + "single_blocks.5.modulation.lin.weight"));
    EXPECT_TRUE(part("transformer.single_transformer_blocks.19.attn.to_qkv_mlp_proj",
                     dm + "single_blocks.19.linear1.weight"));
    EXPECT_TRUE(part("transformer.single_transformer_blocks.19.attn.to_out",
                     dm + "single_blocks.19.linear2.weight"));
    EXPECT_TRUE(part("transformer.x_embedder", dm + "img_in.weight"));
    EXPECT_TRUE(part("transformer.time_text_embed.text_embedder.linear_1",
                     dm + "vector_in.in_layer.weight"));
    EXPECT_TRUE(part("transformer.time_guidance_embed.guidance_embedder.linear_2",
                     dm + "guidance_in.out_layer.weight"));
    EXPECT_TRUE(part("transformer.single_stream_modulation.linear",
                     dm + "single_stream_modulation.lin.weight"));
    EXPECT_TRUE(part("lora_unet_single_transformer_blocks_3_attn_to_out",
                     dm + "single_blocks.3.linear2.weight"));
    EXPECT_TRUE(part("lora_unet_transformer_blocks_3_attn_to_q",
                     dm + "double_blocks.3.img_attn.qkv.weight", 0));
    EXPECT_TRUE(part("lora_unet_single_transformer_blocks_3_proj_mlp",
                     dm + "single_blocks.3.linear1.weight", 3, true));
    EXPECT_TRUE(part("transformer.norm_out.linear", dm + "final_layer.adaLN_modulation.1.weight",
                     -1, false, true));
}

// Diffusers' SD3Transformer2DModel names: Stability's MMDiT weights, the q / k / v thirds of
// the fused qkv (SD3.5's attn2 too); the AdaLayerNormContinuous ones (norm_out, FLUX's too, and
// norm1_context, swapped where the weight has two chunks) with swap_halves.
TEST(LoraNames, Sd3DiffusersKeys) {
    const std::string dm = "model.diffusion_model.", t = "transformer.transformer_blocks.";
    EXPECT_TRUE(part(t + "3.attn.to_q", dm + "joint_blocks.3.x_block.attn.qkv.weight", 0));
    EXPECT_TRUE(part(t + "3.attn.to_v", dm + "joint_blocks.3.x_block.attn.qkv.weight", 2));
    EXPECT_TRUE(
        part(t + "3.attn.add_k_proj", dm + "joint_blocks.3.context_block.attn.qkv.weight", 1));
    EXPECT_TRUE(part(t + "3.attn.to_out.0", dm + "joint_blocks.3.x_block.attn.proj.weight"));
    EXPECT_TRUE(
        part(t + "3.attn.to_add_out", dm + "joint_blocks.3.context_block.attn.proj.weight"));
    EXPECT_TRUE(part(t + "12.attn2.to_k", dm + "joint_blocks.12.x_block.attn2.qkv.weight", 1));
    EXPECT_TRUE(part(t + "12.attn2.to_out.0", dm + "joint_blocks.12.x_block.attn2.proj.weight"));
    EXPECT_TRUE(part(t + "0.ff.net.0.proj", dm + "joint_blocks.0.x_block.mlp.fc1.weight"));
    EXPECT_TRUE(part(t + "0.ff_context.net.2", dm + "joint_blocks.0.context_block.mlp.fc2.weight"));
    EXPECT_TRUE(
        part(t + "0.norm1.linear", dm + "joint_blocks.0.x_block.adaLN_modulation.1.weight"));
    EXPECT_TRUE(part(t + "23.norm1_context.linear",
                     dm + "joint_blocks.23.context_block.adaLN_modulation.1.weight", -1, false,
                     true));
    EXPECT_TRUE(part("transformer.pos_embed.proj", dm + "x_embedder.proj.weight"));
    EXPECT_TRUE(part("transformer.context_embedder", dm + "context_embedder.weight"));
    EXPECT_TRUE(part("transformer.time_text_embed.timestep_embedder.linear_2",
                     dm + "t_embedder.mlp.2.weight"));
    EXPECT_TRUE(
        part("transformer.time_text_embed.text_embedder.linear_1", dm + "y_embedder.mlp.0.weight"));
    EXPECT_TRUE(part("transformer.proj_out", dm + "final_layer.linear.weight"));
    EXPECT_TRUE(part("transformer.norm_out.linear", dm + "final_layer.adaLN_modulation.1.weight",
                     -1, false, true));
    EXPECT_TRUE(part("lora_unet_transformer_blocks_5_attn_add_q_proj",
                     dm + "joint_blocks.5.context_block.attn.qkv.weight", 0));
    EXPECT_TRUE(part("lora_unet_transformer_blocks_5_norm1_context_linear",
                     dm + "joint_blocks.5.context_block.adaLN_modulation.1.weight", -1, false,
                     true));
    EXPECT_TRUE(
        part("lora_unet_time_text_embed_text_embedder_linear_1", dm + "y_embedder.mlp.0.weight"));
    EXPECT_EQ(first("lora_unet_joint_blocks_7_context_block_attn_qkv"),
              dm + "joint_blocks.7.context_block.attn.qkv.weight");
    EXPECT_EQ(first("lora_unet_joint_blocks_7_x_block_adaLN_modulation_1"),
              dm + "joint_blocks.7.x_block.adaLN_modulation.1.weight");
}

}  // namespace
}  // namespace sd
