// A tiny random Qwen-Image DiT under diffusers' names (no model.diffusion_model. prefix): width
// 128 (one head of 128), MLP 512, 16 latent channels, the text width given (32 for the model
// tests, Qwen2.5-VL-7B's 3584 with the fixture LLM); Edit-2511's marker, Layered's
// addition_t_embedding when asked.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "test_util.h"

namespace sd::test {

inline std::map<std::string, Tensor> tiny_qwen_image(int depth, bool zero_cond_t, bool layered,
                                                     int64_t context, int64_t channels = 16) {
    std::map<std::string, Tensor> p;
    uint32_t seed = 500;
    const int64_t C = 128;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = random_tensor({out, in}, seed++, -bound, bound);
        p[name + ".bias"] = random_tensor({out}, seed++, -0.1f, 0.1f);
    };
    auto scale = [&](const std::string& name, int64_t n) {
        p[name + ".weight"] = random_tensor({n}, seed++, 0.5f, 1.5f);
    };
    linear("img_in", 4 * channels, C);
    linear("txt_in", context, C);
    scale("txt_norm", context);
    linear("time_text_embed.timestep_embedder.linear_1", 256, C);
    linear("time_text_embed.timestep_embedder.linear_2", C, C);
    for (int i = 0; i < depth; ++i) {
        const std::string b = "transformer_blocks." + std::to_string(i) + ".";
        for (const char* n : {"to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj",
                              "to_out.0", "to_add_out"})
            linear(b + "attn." + n, C, C);
        for (const char* n : {"norm_q", "norm_k", "norm_added_q", "norm_added_k"})
            scale(b + "attn." + n, C);
        for (const std::string s : {"img", "txt"}) {
            linear(b + s + "_mod.1", C, 6 * C);
            linear(b + s + "_mlp.net.0.proj", C, 4 * C);
            linear(b + s + "_mlp.net.2", 4 * C, C);
        }
    }
    linear("norm_out.linear", C, 2 * C);
    linear("proj_out", C, 4 * channels);
    if (zero_cond_t) p["__index_timestep_zero__"] = Tensor::zeros({1});
    if (layered) p["time_text_embed.addition_t_embedding.weight"] = random_tensor({2, C}, seed++);
    return p;
}

}  // namespace sd::test
