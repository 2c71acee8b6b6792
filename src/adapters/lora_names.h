// Where a LoRA module's key points in the model: the canonical weight names it may mean
// (io/name_conversion.h), most likely first. The caller takes the first one the model has.
//
//   kohya / A1111   lora_unet_down_blocks_0_attentions_0_proj_in (diffusers layout, '_' for '.')
//                   lora_unet_input_blocks_1_1_proj_in            (LDM layout)
//                   lora_te_text_model_encoder_layers_0_self_attn_q_proj, lora_te1_ / lora_te2_
//   diffusers/PEFT  unet.down_blocks.0.attentions.0.proj_in, text_encoder(_2).text_model...,
//                   base_model.model.*, attention processors (attn1.processor.to_q)
//   LDM names       model.diffusion_model.input_blocks..., diffusion_model.*, cond_stage_model.*
#pragma once

#include <string>
#include <vector>

namespace sd {

std::vector<std::string> lora_target_candidates(const std::string& key);

// kohya's '_'-joined module path back to its '.'-joined form, keeping the underscores that
// belong to names ("down_blocks_0_attentions_1_proj_in" -> "down_blocks.0.attentions.1.proj_in").
std::string kohya_to_dotted(const std::string& underscored);

}  // namespace sd
