// Where a LoRA module's key points in the model: the canonical weight names it may mean
// (io/name_conversion.h), most likely first. The caller takes the first one the model has.
//
//   kohya / A1111   lora_unet_down_blocks_0_attentions_0_proj_in (diffusers layout, '_' for '.')
//                   lora_unet_input_blocks_1_1_proj_in            (LDM layout)
//                   lora_te_text_model_encoder_layers_0_self_attn_q_proj, lora_te1_ / lora_te2_
//   diffusers/PEFT  unet.down_blocks.0.attentions.0.proj_in, text_encoder(_2).text_model...,
//                   base_model.model.*, attention processors (attn1.processor.to_q)
//   LDM names       model.diffusion_model.input_blocks..., diffusion_model.*, cond_stage_model.*
//   FLUX diffusers  transformer.transformer_blocks.N.attn.to_q (a third of BFL's qkv), ...
//   SD3 diffusers   transformer.transformer_blocks.N.attn.to_q (a third of joint_blocks.N.
//                   x_block.attn.qkv), norm_out.linear (final adaLN, halves swapped), ...
#pragma once

#include <string>
#include <vector>

namespace sd {

// A weight a LoRA module may patch: all of it, or (block >= 0) a part of a fused weight: the
// in_features rows from block * in_features on, or with `to_end` all rows from there
// (diffusers' to_q / to_k / to_v are blocks 0, 1, 2 of BFL's qkv; proj_mlp is block 3 of
// FLUX.1's linear1, to its end).
struct LoraPart {
    std::string name;
    int block = -1;
    bool to_end = false;
    // Diffusers' AdaLayerNormContinuous ([scale; shift]) for an original adaLN of two chunks
    // ([shift; scale]): where the weight has twice as many rows as columns, the module's
    // output rows are the weight's with its two halves swapped.
    bool swap_halves = false;
};

std::vector<LoraPart> lora_target_candidates(const std::string& key);

// kohya's '_'-joined module path back to its '.'-joined form, keeping the underscores that
// belong to names ("down_blocks_0_attentions_1_proj_in" -> "down_blocks.0.attentions.1.proj_in").
std::string kohya_to_dotted(const std::string& underscored);

}  // namespace sd
