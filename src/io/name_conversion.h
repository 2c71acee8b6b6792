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
//                             T5EncoderModel names (shared.weight, encoder.block.N...)
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

#include "io/tensor_file.h"

namespace sd {

// What a file given to the program holds: -m (a whole model) or one component.
// TextEncoder is the first (or only) CLIP text encoder (--clip_l), TextEncoder2 SDXL's
// OpenCLIP bigG (--clip_g), T5 the T5-XXL encoder (--t5xxl).
enum class ModelRole { Checkpoint, DiffusionModel, Vae, TextEncoder, TextEncoder2, T5 };

const char* model_role_name(ModelRole role);

// Renames (and where needed reshapes or splits) the records of one file into the
// canonical namespace. Names it does not recognise keep their prefix-adjusted form, so
// the loader can report them as unexpected.
std::vector<TensorRecord> to_canonical_names(std::vector<TensorRecord> records, ModelRole role);

// The single-name rules, exposed for tests and tools.
std::string unet_diffusers_to_ldm(const std::string& name, bool up_block_has_attention);
std::string vae_diffusers_to_ldm(const std::string& name);

}  // namespace sd
