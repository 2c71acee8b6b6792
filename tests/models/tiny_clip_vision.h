// A tiny random CLIP vision tower (width 64, 3 layers, 28-pixel images in 14-pixel patches:
// 5 tokens) in the names of ComfyUI's clip_vision_h.safetensors: the CLIP-vision tests' model and
// the Wan image-to-video tests' image encoder.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "test_util.h"

namespace sd::test {

constexpr int64_t kTinyClipWidth = 64, kTinyClipHeads = 4, kTinyClipFfn = 96, kTinyClipDepth = 3,
                  kTinyClipProj = 48, kTinyClipPatch = 14, kTinyClipImage = 28;
constexpr int64_t kTinyClipTokens =
    (kTinyClipImage / kTinyClipPatch) * (kTinyClipImage / kTinyClipPatch) + 1;

// transformers' CLIPEncoderLayer tensors of `depth` layers under `prefix` ("vision_model.").
inline void add_clip_encoder_layers(std::map<std::string, Tensor>& p, const std::string& prefix,
                                    int64_t depth, uint32_t& seed) {
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[prefix + name + ".weight"] = random_tensor({out, in}, seed++, -bound, bound);
        p[prefix + name + ".bias"] = random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    for (int64_t i = 0; i < depth; ++i) {
        const std::string l = "encoder.layers." + std::to_string(i) + ".";
        for (const char* n : {"layer_norm1", "layer_norm2"}) {
            p[prefix + l + n + ".weight"] = random_tensor({kTinyClipWidth}, seed++, 0.5f, 1.5f);
            p[prefix + l + n + ".bias"] = random_tensor({kTinyClipWidth}, seed++, -0.1f, 0.1f);
        }
        for (const char* n : {"q_proj", "k_proj", "v_proj", "out_proj"})
            linear(l + "self_attn." + n, kTinyClipWidth, kTinyClipWidth);
        linear(l + "mlp.fc1", kTinyClipWidth, kTinyClipFfn);
        linear(l + "mlp.fc2", kTinyClipFfn, kTinyClipWidth);
    }
}

inline void add_clip_norm(std::map<std::string, Tensor>& p, const std::string& name,
                          uint32_t& seed) {
    p[name + ".weight"] = random_tensor({kTinyClipWidth}, seed++, 0.5f, 1.5f);
    p[name + ".bias"] = random_tensor({kTinyClipWidth}, seed++, -0.1f, 0.1f);
}

// In the names of ComfyUI's clip_vision_h.safetensors and transformers' image_encoder.
inline std::map<std::string, Tensor> tiny_clip_vision(bool projection) {
    std::map<std::string, Tensor> p;
    uint32_t seed = 900;
    const std::string v = "vision_model.";
    const float bound = 1.0f / std::sqrt(3.0f * kTinyClipPatch * kTinyClipPatch);
    p[v + "embeddings.patch_embedding.weight"] =
        random_tensor({kTinyClipWidth, 3, kTinyClipPatch, kTinyClipPatch}, seed++, -bound, bound);
    p[v + "embeddings.class_embedding"] = random_tensor({kTinyClipWidth}, seed++);
    p[v + "embeddings.position_embedding.weight"] =
        random_tensor({kTinyClipTokens, kTinyClipWidth}, seed++, -0.5f, 0.5f);
    add_clip_norm(p, v + "pre_layrnorm", seed);
    add_clip_encoder_layers(p, v, kTinyClipDepth, seed);
    add_clip_norm(p, v + "post_layernorm", seed);
    if (projection) {
        const float b = 1.0f / std::sqrt(static_cast<float>(kTinyClipWidth));
        p["visual_projection.weight"] =
            random_tensor({kTinyClipProj, kTinyClipWidth}, seed++, -b, b);
    }
    return p;
}

}  // namespace sd::test
