// Guidance: how the diffusion model's outputs under several conditionings combine into the
// one prediction a sampler steps with, as stable-diffusion.cpp combines them (on the raw
// model outputs, before the denoiser's scalings). Functions over tensors of one shape;
// they know nothing of networks.
#pragma once

#include "tensor/tensor.h"

namespace sd {

// Classifier-free guidance: uncond + (cond - uncond) * scale.
Tensor classifier_free_guidance(const Tensor& cond, const Tensor& uncond, float scale);

// Instruct-pix2pix's two-sided guidance (text and image):
// uncond + (img_cond - uncond) * img_scale + (cond - img_cond) * txt_scale,
// where img_cond has the image but not the text.
Tensor image_text_guidance(const Tensor& cond, const Tensor& img_cond, const Tensor& uncond,
                           float txt_scale, float img_scale);

// Skip-layer guidance: guided + (cond - skipped) * scale, where skipped is the conditional
// prediction of the model run without some of its blocks.
Tensor skip_layer_guidance(const Tensor& guided, const Tensor& cond, const Tensor& skipped,
                           float scale);

}  // namespace sd
