// Tensor names from every common layout to the one namespace the models read:
//
//   model.diffusion_model.*   the UNet / DiT, original LDM names (input_blocks.1.0.in_layers.0 ...)
//   first_stage_model.*       the VAE, original LDM names (encoder.down.0.block.0.conv1 ...)
//   cond_stage_model.transformer.text_model.*
//                             the SD 1.x/2.x text encoder and SDXL's CLIP-L, Hugging Face
//                             CLIPTextModel names (SD 2.x's OpenCLIP layout is split into them)
//   cond_stage_model.1.transformer.{text_model.*, text_projection.weight}
//                             SDXL's second text encoder, OpenCLIP bigG, the same names
//   text_encoders.t5xxl.transformer.*
//                             the T5-XXL encoder of FLUX/SD3 (--t5xxl), Hugging Face
//                             T5EncoderModel names (shared.weight, encoder.block.N...);
//                             llama.cpp's T5 GGUF names (token_embd, enc.blk.N.attn_q ...)
//                             are converted to them
//   text_encoders.llm.*       the LLM text encoder (--llm), Hugging Face causal-LM names
//                             (model.embed_tokens, model.layers.N.self_attn.q_proj ...);
//                             llama.cpp's GGUF names (token_embd, blk.N.attn_q, output_norm
//                             ...) are converted to them; ComfyUI's names
//                             "text_encoders.<name>[.transformer].model.*" (qwen3_4b ...: an
//                             all-in-one file's or a --llm file's) are moved here
//   ...                       the other roles of component_roles.h (--llm, --clip_vision ...)
//                             under their prefixes, their names kept as the file has them
//                             until a family that reads them converts them here
//
// Layouts read: the original single-file checkpoints (SD 1.x, SD 2.x with OpenCLIP's
// `cond_stage_model.model.*` whose attention is one fused `in_proj_weight`), diffusers
// (`down_blocks.0.resnets.0.norm1`, `encoder.down_blocks.0...`, `text_model.*`), and separate
// component files with or without their prefix. OpenCLIP's fused q/k/v projection becomes
// three views of the same bytes, and diffusers' linear VAE attention weights [C, C] become
// the 1x1 convolutions [C, C, 1, 1] of the original; no tensor is copied.
#pragma once

#include <string>
#include <vector>

#include "io/component_roles.h"
#include "io/tensor_file.h"

namespace sd {

// Renames (and where needed reshapes or splits) the records of one file into the
// canonical namespace. Names it does not recognise keep their prefix-adjusted form, so
// the loader can report them as unexpected.
std::vector<TensorRecord> to_canonical_names(std::vector<TensorRecord> records, ModelRole role);

// The single-name rules, exposed for tests and tools.
std::string unet_diffusers_to_ldm(const std::string& name, bool up_block_has_attention);
std::string vae_diffusers_to_ldm(const std::string& name);

}  // namespace sd
