// A tiny Wan for the tests of the video path: a random DiT and (U)MT5 written as f32 files in
// the temp folder (used with the fixture Wan 2.1 VAE or a tiny Wan 2.2 one, and the fixtures'
// UMT5 vocabulary).
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "io/io_test_util.h"
#include "test_util.h"

namespace sd::test {

constexpr int64_t kTinyWanDim = 256, kTinyWanText = 64, kTinyWanLatent = 16;

struct TinyParams {
    std::map<std::string, Tensor> p;
    uint32_t seed = 900;
    void linear(const std::string& name, int64_t in, int64_t out, bool bias = true) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = random_tensor({out, in}, seed++, -bound, bound);
        if (bias) p[name + ".bias"] = random_tensor({out}, seed++, -0.1f, 0.1f);
    }
    void scale(const std::string& name, int64_t n) {
        p[name] = random_tensor({n}, seed++, 0.5f, 1.5f);
    }
};

// A random Wan DiT of one block, 256 wide (two heads), reading `text`-wide states (64: the
// tiny UMT5's), `latent` channels out (16: Wan 2.1; 48: Wan2.2 TI2V). With `clip` > 0 an
// image-to-video one: it reads 2 latent + 4 channels and `clip`-wide CLIP-vision states
// (img_emb, the image keys and values), FLF2V's emb_pos too when `flf`. Another `seed` makes
// other weights (a second expert).
// The attention, norm and feed-forward weights of a Wan block named `b` ("blocks.0.").
inline void tiny_wan_block(TinyParams& w, const std::string& b) {
    for (const char* a : {"self_attn.", "cross_attn."}) {
        for (const char* n : {"q", "k", "v", "o"}) w.linear(b + a + n, kTinyWanDim, kTinyWanDim);
        w.scale(b + a + "norm_q.weight", kTinyWanDim);
        w.scale(b + a + "norm_k.weight", kTinyWanDim);
    }
    w.scale(b + "norm3.weight", kTinyWanDim);
    w.p[b + "norm3.bias"] = Tensor::zeros({kTinyWanDim});
    w.linear(b + "ffn.0", kTinyWanDim, 64);
    w.linear(b + "ffn.2", 64, kTinyWanDim);
    w.p[b + "modulation"] = random_tensor({1, 6, kTinyWanDim}, w.seed++, -0.1f, 0.1f);
}

// `vace` > 0: a VACE model besides (its context channels, one control block after block 0);
// its main weights are those of the same call without it.
inline std::string tiny_wan_dit(int64_t latent = kTinyWanLatent, int64_t text = kTinyWanText,
                                int64_t clip = 0, bool flf = false, uint32_t seed = 900,
                                int64_t vace = 0) {
    TinyParams w;
    w.seed = seed;
    const int64_t in = clip > 0 ? 2 * latent + 4 : latent;
    w.p["patch_embedding.weight"] =
        random_tensor({kTinyWanDim, in, 1, 2, 2}, w.seed++, -0.2f, 0.2f);
    w.p["patch_embedding.bias"] = random_tensor({kTinyWanDim}, w.seed++, -0.1f, 0.1f);
    w.linear("text_embedding.0", text, kTinyWanDim);
    w.linear("text_embedding.2", kTinyWanDim, kTinyWanDim);
    w.linear("time_embedding.0", 256, kTinyWanDim);
    w.linear("time_embedding.2", kTinyWanDim, kTinyWanDim);
    w.linear("time_projection.1", kTinyWanDim, 6 * kTinyWanDim);
    tiny_wan_block(w, "blocks.0.");
    w.linear("head.head", kTinyWanDim, 4 * latent);
    w.p["head.modulation"] = random_tensor({1, 2, kTinyWanDim}, w.seed++, -0.1f, 0.1f);
    if (clip > 0) {
        w.linear("blocks.0.cross_attn.k_img", kTinyWanDim, kTinyWanDim);
        w.linear("blocks.0.cross_attn.v_img", kTinyWanDim, kTinyWanDim);
        w.scale("blocks.0.cross_attn.norm_k_img.weight", kTinyWanDim);
        w.scale("img_emb.proj.0.weight", clip);
        w.p["img_emb.proj.0.bias"] = Tensor::zeros({clip});
        w.linear("img_emb.proj.1", clip, clip);
        w.linear("img_emb.proj.3", clip, kTinyWanDim);
        w.scale("img_emb.proj.4.weight", kTinyWanDim);
        w.p["img_emb.proj.4.bias"] = Tensor::zeros({kTinyWanDim});
        if (flf) w.p["img_emb.emb_pos"] = random_tensor({1, 514, clip}, w.seed++, -0.1f, 0.1f);
    }
    if (vace > 0) {
        w.p["vace_patch_embedding.weight"] =
            random_tensor({kTinyWanDim, vace, 1, 2, 2}, w.seed++, -0.2f, 0.2f);
        w.p["vace_patch_embedding.bias"] = random_tensor({kTinyWanDim}, w.seed++, -0.1f, 0.1f);
        tiny_wan_block(w, "vace_blocks.0.");
        w.linear("vace_blocks.0.before_proj", kTinyWanDim, kTinyWanDim);
        w.linear("vace_blocks.0.after_proj", kTinyWanDim, kTinyWanDim);
    }
    return write_f32_safetensors(w.p, "tiny_wan_dit_" + std::to_string(latent) + "_" +
                                          std::to_string(text) + "_" + std::to_string(clip) +
                                          (flf ? "_flf" : "") + "_" + std::to_string(seed) +
                                          (vace > 0 ? "_vace" : ""));
}

// A T5 of 2 blocks, 4 heads of 16; UMT5 when every block has a position bias.
inline std::string tiny_t5(bool umt5, int64_t vocab) {
    TinyParams w;
    w.p["shared.weight"] = random_tensor({vocab, kTinyWanText}, w.seed++);
    for (int i = 0; i < 2; ++i) {
        const std::string a = "encoder.block." + std::to_string(i) + ".layer.0.";
        const std::string f = "encoder.block." + std::to_string(i) + ".layer.1.";
        for (const char* n : {"q", "k", "v", "o"})
            w.linear(a + "SelfAttention." + n, kTinyWanText, kTinyWanText, false);
        if (umt5 || i == 0)
            w.p[a + "SelfAttention.relative_attention_bias.weight"] =
                random_tensor({32, 4}, w.seed++);
        w.scale(a + "layer_norm.weight", kTinyWanText);
        w.linear(f + "DenseReluDense.wi_0", kTinyWanText, 96, false);
        w.linear(f + "DenseReluDense.wi_1", kTinyWanText, 96, false);
        w.linear(f + "DenseReluDense.wo", 96, kTinyWanText, false);
        w.scale(f + "layer_norm.weight", kTinyWanText);
    }
    w.scale("encoder.final_layer_norm.weight", kTinyWanText);
    return write_f32_safetensors(w.p, umt5 ? "tiny_umt5" : "tiny_t5");
}

}  // namespace sd::test
