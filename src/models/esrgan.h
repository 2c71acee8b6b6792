// ESRGAN / Real-ESRGAN super-resolution: BasicSR's RRDBNet (rrdbnet_arch.py), as
// stable-diffusion.cpp's esrgan.hpp runs it. The layout is read from the weights: the
// number of RRDB blocks (23 for RealESRGAN_x4plus, 6 for x4plus_anime_6B), the widths, the
// 2x upsampling stages (conv_up1 / conv_up2) and a pixel-unshuffled input (conv_first
// reading 4x or 16x the image channels, as RealESRGAN_x2plus). Both the BasicSR names
// (conv_first, body.N.rdbK.convJ, ...) and the original ESRGAN ones (model.0,
// model.1.sub.N.RDBK.convJ.0, ...) are read, with or without a params_ema. / params. prefix.
#pragma once

#include <string>
#include <vector>

#include "io/model_files.h"
#include "nn/layers.h"

namespace sd {

struct EsrganLayout {
    bool original_names = false;  // ESRGAN's model.N naming
    std::string prefix;           // "", "params_ema." or "params."
    int num_blocks = 23;          // RRDB blocks in the body
    int upsamples = 2;            // nearest 2x + conv stages
    int unshuffle = 1;            // pixel-unshuffle factor of the input (1, 2 or 4)
    int scale = 4;                // output pixels per input pixel: 2^upsamples / unshuffle
    int64_t in_channels = 3, out_channels = 3;
    int64_t num_feat = 64, num_grow = 32;
};

// The layout of the ESRGAN in `files`; an sd::Error naming `what` (the file) when they hold
// no ESRGAN (another kind of model, or a layout this reader does not know).
EsrganLayout detect_esrgan(const ModelFiles& files, const std::string& what);

// One residual dense block: five 3x3 convolutions, each reading x and every earlier output
// concatenated, LeakyReLU(0.2) after the first four; x + 0.2 * conv5.
struct ResidualDenseBlock {
    Conv2d conv[5];

    // w: the block's scope ("body.N.rdbK." or "model.1.sub.N.RDBK.").
    static ResidualDenseBlock load(const Weights& w, const EsrganLayout& l);
    // buf: [1, F + 4G, H, W] holding x in its first F channels; the other channels are
    // overwritten with the block's features. Writes x + 0.2 * conv5 into `out` ([1, F, H, W],
    // may be buf's first F channels).
    void forward(const Tensor& buf, const Tensor& out) const;
};

// Residual in residual: three dense blocks, x + 0.2 * rdb3(rdb2(rdb1(x))).
struct Rrdb {
    ResidualDenseBlock rdb[3];

    // bufs: three [1, F + 4G, H, W] buffers; x is in bufs[0]'s first F channels, where the
    // result replaces it.
    void forward(const Tensor (&bufs)[3]) const;
};

class Esrgan {
  public:
    // Reads the layout and binds the weights; errors name `what` (the file).
    static Esrgan load(const ModelFiles& files, const std::string& what,
                       Residency residency = Residency::Resident);

    const EsrganLayout& layout() const { return layout_; }
    int scale() const { return layout_.scale; }

    // x: [1, C, H, W] in [0, 1] -> [1, C, H * scale, W * scale] (values may leave [0, 1]).
    Tensor forward(const Tensor& x) const;

    void release_weights() const { pages_.release(); }

  private:
    Tensor unshuffled_input(const Tensor& x) const;

    EsrganLayout layout_;
    Conv2d conv_first;
    std::vector<Rrdb> body;
    Conv2d conv_body;
    std::vector<Conv2d> conv_up;  // each reads its input upsampled 2x (nearest)
    Conv2d conv_hr, conv_last;
    WeightPages pages_;
};

}  // namespace sd
