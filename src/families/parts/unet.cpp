#include "families/parts/unet.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/error.h"

namespace sd {
namespace {

constexpr const char* kUNet = "model.diffusion_model.";

}  // namespace

Tensor UNetDiffusionModel::forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                                   const ControlSignal* control) const {
    if (!control) return unet_.forward(x, timesteps, c.context, c.vector);
    const UNetControl unet_control{control->residuals, control->strength};
    return unet_.forward(x, timesteps, c.context, c.vector, &unet_control);
}

namespace {

// Where the file keeps its ControlNet: control_model.* (ldm's cldm), or bare names, which
// the loader files under the UNet's prefix.
std::string control_net_prefix(const ModelFiles& files, const std::string& path) {
    for (const char* prefix : {"control_model.", "model.diffusion_model.", ""}) {
        if (files.find(std::string(prefix) + "input_hint_block.0.weight")) return prefix;
    }
    fail("%s is not a ControlNet: it has no input_hint_block (%zu tensors)", path.c_str(),
         files.size());
}

std::string widths(const std::vector<int64_t>& channels) {
    std::string out;
    for (int64_t c : channels) out += (out.empty() ? "" : " ") + std::to_string(c);
    return out;
}

}  // namespace

std::unique_ptr<ControlModel> load_control_net(const std::string& path, const ModelComponents& m,
                                               const MemoryPolicy& memory) {
    const auto* unet = dynamic_cast<const UNetDiffusionModel*>(&m.diffusion->unplaced());
    SD_CHECK(unet, "%s: a ControlNet needs a UNet model (SD 1.x, 2.x, XL), not %s", path.c_str(),
             m.family_name.c_str());
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    const std::string prefix = control_net_prefix(files, path);
    std::optional<ControlNet> net;
    try {
        net = ControlNet::load(Weights(files, prefix, memory.residency));
    } catch (const Error& e) {
        fail("%s: %s", path.c_str(), e.what());
    }
    const UNetConfig& nc = net->config();
    const UNetConfig& uc = unet->unet().config();
    const std::vector<int64_t> want = unet->unet().control_channels();
    const std::vector<int64_t> have = net->residual_channels();
    SD_CHECK(
        have == want && nc.context_dim == uc.context_dim && nc.in_channels == m.latent.channels,
        "%s: this ControlNet (residual widths %s, context %lld, %lld input channels) does not "
        "fit the %s UNet (skip widths %s, context %lld, %lld latent channels)",
        path.c_str(), widths(have).c_str(), (long long)nc.context_dim, (long long)nc.in_channels,
        m.family_name.c_str(), widths(want).c_str(), (long long)uc.context_dim,
        (long long)m.latent.channels);
    SD_CHECK(net->hint_channels() == 3, "%s: a ControlNet hint of %lld channels (expected 3)",
             path.c_str(), (long long)net->hint_channels());
    return std::make_unique<ControlNetModel>(std::move(*net));
}

std::unique_ptr<UNetDiffusionModel> load_unet(const ModelFiles& files, const LoadOptions& options) {
    return std::make_unique<UNetDiffusionModel>(
        UNet::load(Weights(files, kUNet, options.memory.residency)));
}

void add_unet_and_vae(ModelComponents& m, std::unique_ptr<UNetDiffusionModel> unet,
                      const ModelFiles& files, const LoadOptions& options, const char* family) {
    const int64_t in = unet->in_channels();
    if (in == 8) fail("%s instruct-pix2pix models are not supported by this build yet", family);
    m.extra_input = in == 9 ? ExtraInput::MaskAndMaskedLatent : ExtraInput::None;
    m.diffusion = std::move(unet);
    m.codec = load_kl_vae(files, options);
}

int64_t unet_context_dim(const ModelFiles& files) {
    for (const char* block : {"input_blocks.1.1", "input_blocks.4.1", "input_blocks.7.1",
                              "input_blocks.2.1", "input_blocks.5.1", "middle_block.1"}) {
        std::string name = std::string(kUNet) + block + ".transformer_blocks.0.attn2.to_k.weight";
        if (const TensorRecord* r = files.find(name); r && r->shape.size() == 2) return r->shape[1];
    }
    return 0;
}

int64_t unet_in_channels(const ModelFiles& files) {
    const TensorRecord* r = files.find(std::string(kUNet) + "input_blocks.0.0.weight");
    return r && r->shape.size() == 4 ? r->shape[1] : 0;
}

bool unet_has_label_emb(const ModelFiles& files) {
    return files.has_prefix(std::string(kUNet) + "label_emb.");
}

}  // namespace sd
