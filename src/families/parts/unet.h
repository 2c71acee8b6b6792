// What the UNet families (SD 1.x, SD 2.x, SDXL) share: the UNet as a diffusion model, a
// ControlNet as its control model, the helpers that load them and read the UNet's layout.
// Family-specific choices (text encoders, prediction, latent scale) stay in the family's
// own file.
#pragma once

#include "families/family.h"
#include "families/parts/kl_vae.h"
#include "models/controlnet.h"
#include "models/unet.h"

namespace sd {

// The UNet's timestep and class embeddings stay in their own dtype in -M convert.
inline constexpr const char* kUnetConvertKeeps[] = {"time_embed.", "label_emb."};

class UNetDiffusionModel : public DiffusionModel {
  public:
    explicit UNetDiffusionModel(UNet unet) : unet_(std::move(unet)) {}
    using DiffusionModel::forward;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override;
    int64_t in_channels() const override { return unet_.config().in_channels; }
    int64_t down_factor() const override { return 8; }
    void release_weights() const override { unet_.release_weights(); }
    CacheTarget cache_target() const override { return CacheTarget::UNet; }
    size_t weight_bytes() const override { return unet_.weight_pages().bytes(); }
    const UNet& unet() const { return unet_; }

  private:
    UNet unet_;
};

// A ControlNet for a UNet model: the residuals come in the order UNet::forward takes them.
class ControlNetModel : public ControlModel {
  public:
    explicit ControlNetModel(ControlNet net) : net_(std::move(net)) {}
    Tensor encode_hint(const Tensor& image01) const override { return net_.encode_hint(image01); }
    std::vector<Tensor> forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                                const Tensor& hint) const override {
        return net_.forward(x, timesteps, c.context, c.vector, hint);
    }
    void release_weights() const override { net_.release_weights(); }
    size_t weight_bytes() const override { return net_.weight_pages().bytes(); }
    const ControlNet& net() const { return net_; }

  private:
    ControlNet net_;
};

// Loads the ControlNet in `path` (control_model.* names, or the same names bare) for the
// UNet of `m`, with `memory`'s residency. A file without a ControlNet, or one whose layout
// does not fit the UNet (widths, levels, context), is an error naming it.
std::unique_ptr<ControlModel> load_control_net(const std::string& path, const ModelComponents& m,
                                               const MemoryPolicy& memory);

// The UNet under model.diffusion_model.
std::unique_ptr<UNetDiffusionModel> load_unet(const ModelFiles& files, const LoadOptions& options);

// Puts the UNet and the VAE into `m`: an in_channels of latent + 1 + latent (9) marks an
// inpaint checkpoint, 8 (instruct-pix2pix) is refused naming `family`.
void add_unet_and_vae(ModelComponents& m, std::unique_ptr<UNetDiffusionModel> unet,
                      const ModelFiles& files, const LoadOptions& options, const char* family);

// The width of the UNet's cross-attention context (0 without a UNet), its input channels,
// and whether it has label_emb: what UNet families detect themselves by.
int64_t unet_context_dim(const ModelFiles& files);
int64_t unet_in_channels(const ModelFiles& files);
bool unet_has_label_emb(const ModelFiles& files);

}  // namespace sd
