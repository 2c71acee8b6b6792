// Tiny random FLUX-layout weights for the model tests: width 128 (one head of 128), MLP 256,
// 64 patch values in and out, text width 32, with BFL's names (no model.diffusion_model.
// prefix). tiny_flux: FLUX.1 with pooled width 16 (dev with guidance_in; img_in of 384 for
// Fill, 128 for Canny / Depth); tiny_chroma: the
// same blocks without their modulation linears, and Chroma's distilled guidance layer of
// inner width 32; tiny_chroma_radiance: tiny_chroma's transformer between Chroma-Radiance's
// pixel heads.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "test_util.h"

namespace sd::test {

using Params = std::map<std::string, Tensor>;

class TinyFluxWriter {
  public:
    explicit TinyFluxWriter(uint32_t seed) : seed_(seed) {}

    void linear(const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = random_tensor({out, in}, seed_++, -bound, bound);
        p[name + ".bias"] = random_tensor({out}, seed_++, -0.1f, 0.1f);
    }
    void conv(const std::string& name, int64_t in, int64_t out, int64_t k) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in * k * k));
        p[name + ".weight"] = random_tensor({out, in, k, k}, seed_++, -bound, bound);
        p[name + ".bias"] = random_tensor({out}, seed_++, -0.1f, 0.1f);
    }
    void scale(const std::string& name, int64_t n) {
        p[name] = random_tensor({n}, seed_++, 0.5f, 1.5f);
    }
    // img_in of `img_in` inputs: 64, or Fill's 384 / Canny and Depth's 128; txt_in of `text`.
    void inputs(int64_t img_in = 64, int64_t text = 32) {
        linear("img_in", img_in, kC);
        linear("txt_in", text, kC);
    }
    // The blocks and final_layer.linear; each block's modulation linear and the final adaLN
    // when `modulation`.
    void blocks(int depth, int single, bool modulation) {
        for (int i = 0; i < depth; ++i) {
            for (const char* s : {"img", "txt"}) {
                const std::string x = "double_blocks." + std::to_string(i) + "." + s;
                if (modulation) linear(x + "_mod.lin", kC, 6 * kC);
                linear(x + "_attn.qkv", kC, 3 * kC);
                linear(x + "_attn.proj", kC, kC);
                scale(x + "_attn.norm.query_norm.scale", kC);
                scale(x + "_attn.norm.key_norm.scale", kC);
                linear(x + "_mlp.0", kC, kMlp);
                linear(x + "_mlp.2", kMlp, kC);
            }
        }
        for (int i = 0; i < single; ++i) {
            const std::string b = "single_blocks." + std::to_string(i) + ".";
            linear(b + "linear1", kC, 3 * kC + kMlp);
            linear(b + "linear2", kC + kMlp, kC);
            if (modulation) linear(b + "modulation.lin", kC, 3 * kC);
            scale(b + "norm.query_norm.scale", kC);
            scale(b + "norm.key_norm.scale", kC);
        }
        if (modulation) linear("final_layer.adaLN_modulation.1", kC, 2 * kC);
        linear("final_layer.linear", kC, 64);
    }

    Params p;
    static constexpr int64_t kC = 128, kMlp = 256;

  private:
    uint32_t seed_;
};

// text, pooled: the context's and the pooled vector's widths (T5-XXL's 4096 and CLIP-L's 768
// to run with the real text encoders).
inline Params tiny_flux(int depth, int single, bool guidance, int64_t img_in = 64,
                        int64_t text = 32, int64_t pooled = 16) {
    TinyFluxWriter w(100);
    w.inputs(img_in, text);
    auto embedder = [&](const std::string& name, int64_t in) {
        w.linear(name + ".in_layer", in, TinyFluxWriter::kC);
        w.linear(name + ".out_layer", TinyFluxWriter::kC, TinyFluxWriter::kC);
    };
    embedder("time_in", 256);
    if (guidance) embedder("guidance_in", 256);
    embedder("vector_in", pooled);
    w.blocks(depth, single, true);
    return w.p;
}

inline Params tiny_chroma(int depth, int single, int approximator_layers, int64_t text = 32) {
    TinyFluxWriter w(300);
    const std::string a = "distilled_guidance_layer.";
    const int64_t inner = 32;
    w.linear(a + "in_proj", 64, inner);
    for (int i = 0; i < approximator_layers; ++i) {
        const std::string n = std::to_string(i);
        w.linear(a + "layers." + n + ".in_layer", inner, inner);
        w.linear(a + "layers." + n + ".out_layer", inner, inner);
        w.scale(a + "norms." + n + ".scale", inner);
    }
    w.linear(a + "out_proj", inner, TinyFluxWriter::kC);
    w.inputs(64, text);
    w.blocks(depth, single, false);
    return w.p;
}

// Chroma-Radiance's heads around tiny_chroma's transformer: the 16x16 pixel patch embedding and
// a NeRF head of width 16 (MLP ratio 2, 4 frequencies per axis) with `nerf` blocks; `x0` and
// `patch32` add the variants' (empty) marker tensors __x0__ and __32x32__.
inline Params tiny_chroma_radiance(int depth, int single, int nerf, bool x0 = false,
                                   bool patch32 = false, int64_t text = 32) {
    TinyFluxWriter w(700);
    w.p = tiny_chroma(depth, single, 2, text);
    w.p.erase("img_in.weight");
    w.p.erase("img_in.bias");
    w.p.erase("final_layer.linear.weight");
    w.p.erase("final_layer.linear.bias");
    constexpr int64_t kNerf = 16, kRatio = 2, kFreqs = 4;
    w.conv("img_in_patch", 3, TinyFluxWriter::kC, 16);
    w.linear("nerf_image_embedder.embedder.0", 3 + kFreqs * kFreqs, kNerf);
    for (int i = 0; i < nerf; ++i) {
        const std::string b = "nerf_blocks." + std::to_string(i) + ".";
        w.linear(b + "param_generator", TinyFluxWriter::kC, 3 * kNerf * kNerf * kRatio);
        w.scale(b + "norm.scale", kNerf);
    }
    w.scale("nerf_final_layer_conv.norm.scale", kNerf);
    w.conv("nerf_final_layer_conv.conv", kNerf, 3, 3);
    if (x0) w.p["__x0__"] = Tensor::zeros({0});
    if (patch32) w.p["__32x32__"] = Tensor::zeros({0});
    return w.p;
}

}  // namespace sd::test
