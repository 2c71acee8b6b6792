// ControlNet (ldm's cldm.py ControlNet, v1.0/v1.1 and the SDXL layouts), with its tensor
// names under control_model.*: a copy of the UNet's first half (time_embed [+ label_emb],
// input_blocks, middle_block; see UNetEncoder) that also takes a hint image. The hint is
// encoded by input_hint_block (eight 3x3 convs with SiLU between them, three of stride 2,
// down to the latent size) and added after input_blocks.0; each input block's output goes
// through a 1x1 zero_convs.N and the middle block's through middle_block_out.0. Those
// outputs are the residuals a UNet adds to its skips and middle block (UNetControl).
#pragma once

#include <vector>

#include "models/unet.h"

namespace sd {

class ControlNet {
  public:
    // w = the prefix holding input_hint_block.* ("control_model.").
    static ControlNet load(const Weights& w);

    // hint: [B, hint channels, H, W] with values in [0, 1], H and W multiples of 8 ->
    // the guided hint [B, model_channels, H/8, W/8]. It depends on nothing else, so a
    // generation computes it once.
    Tensor encode_hint(const Tensor& hint) const;
    // x: [B, in_channels, h, w] (the UNet's noisy input, without an inpaint model's extra
    // channels), timesteps, context and y as UNet::forward; guided_hint from encode_hint.
    // Returns one residual for each input block, then the middle block's.
    std::vector<Tensor> forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                                const Tensor& y, const Tensor& guided_hint) const;

    const UNetConfig& config() const { return encoder_.config; }
    // The widths of forward's residuals, in order (to match a UNet's control_channels()).
    std::vector<int64_t> residual_channels() const;
    int64_t hint_channels() const { return hint_convs_.front().weight.size(1); }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    UNetEncoder encoder_;
    std::vector<Conv2d> hint_convs_;  // input_hint_block.0, .2, ... .14 (SiLU between)
    std::vector<Conv2d> zero_convs_;  // one for each input block
    Conv2d middle_block_out_;
    WeightPages pages_;
};

}  // namespace sd
