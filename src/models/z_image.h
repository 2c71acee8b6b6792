// The Z-Image diffusion transformer (Z-Image-Turbo and Z-Image base; Alibaba's S3-DiT, a
// Lumina-2 NextDiT descendant), as diffusers' ZImageTransformer2DModel and
// stable-diffusion.cpp's z_image.hpp, with the original tensor names:
//   x_embedder (2x2 patches, channels last), cap_embedder (RMSNorm + Linear of the LLM's
//   states), t_embedder (sinusoid -> mlp.0 -> SiLU -> mlp.2, 256 wide: the adaLN input);
//   context_refiner.N (text only, no modulation) and noise_refiner.N (image only) blocks,
//   then layers.N over [text, image] in one stream, then final_layer.
// A block: RMS-normed attention (fused qkv, RMS q/k norms, 3-axis RoPE) and a SwiGLU
// feed-forward, each between two RMS norms; modulated blocks scale the first norm's output
// by (1 + scale) and gate the second's by tanh(gate). Text and image are each padded to a
// multiple of 32 tokens with learned pad tokens (cap_pad_token, x_pad_token), which attend
// like any other token. RoPE: theta 256, axes 32/48/48; text token i at (i + 1, 0, 0), image
// patches at (text length + 1, row, col), image padding at (0, 0, 0). The output is negated
// (the network predicts x0 - noise; the flow sampler wants noise - x0).
// Widths, depths and heads are read from the weights.
#pragma once

#include <vector>

#include "nn/dit_blocks.h"
#include "nn/layers.h"

namespace sd {

struct ZImageConfig {
    int64_t patch = 2;
    int64_t in_channels = 16;  // latent channels
    int64_t out_channels = 16;
    int64_t hidden = 3840;
    int64_t heads = 30;
    int64_t head_dim = 128;
    int64_t ffn = 10240;
    int64_t cap_dim = 2560;  // the LLM's width (Qwen3-4B)
    int64_t adaln = 256;     // the time embedding's width, every modulation's input
    int layers = 30;
    int refiner_layers = 2;
    float norm_eps = 1e-5f;
    float theta = 256.0f;
    std::vector<int> axes_dim = {32, 48, 48};
};

struct ZImageBlock {
    Linear qkv, out;        // attention: fused q, k, v; output projection
    Tensor q_norm, k_norm;  // RMS scales over a head, f32
    Linear w1, w2, w3;      // feed-forward: w2(silu(w1 x) * w3 x)
    Tensor attention_norm1, attention_norm2, ffn_norm1, ffn_norm2;  // RMS scales, f32
    Linear modulation;  // adaLN_modulation.0: scale_msa, gate_msa, scale_mlp, gate_mlp; or none
};

class ZImageModel {
  public:
    // w = "model.diffusion_model."; throws listing every missing or mis-shaped tensor.
    static ZImageModel load(const Weights& w);

    // x: [1, C, H, W] latent (padded to whole patches inside), timesteps: f32 [1], the flow
    // denoiser's t = sigma * 1000 (turned into the network's own time, 1000 - t, inside),
    // context: the LLM's states [1, L, cap_dim]. Returns the flow velocity [1, C, H, W].
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Tensor& context) const;

    const ZImageConfig& config() const { return config_; }
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor attention(const ZImageBlock& b, const Tensor& x, const Tensor& rope) const;
    Tensor block(const ZImageBlock& b, const Tensor& x, const Tensor& rope,
                 const Tensor& t_emb) const;

    ZImageConfig config_;
    Linear x_embedder, cap_linear;
    Tensor cap_norm;                    // cap_embedder.0: RMS scale [cap_dim]
    Tensor cap_pad_token, x_pad_token;  // [1, hidden], f32
    MlpEmbedder t_embedder;             // mlp.0, mlp.2
    std::vector<ZImageBlock> noise_refiner, context_refiner, layers;
    Linear final_adaln, final_linear;
    WeightPages pages_;
};

// The positions of Z-Image's tokens (rows of 3 values): `txt` text tokens (already padded)
// at (i + 1, 0, 0), the h x w patches at (txt + 1, row, col), `img_pad` padding tokens at 0.
std::vector<float> z_image_positions(int64_t txt, int64_t h, int64_t w, int64_t img_pad);

}  // namespace sd
