// Tiny random FLUX.2 weights with BFL's names (no model.diffusion_model. prefix): width 128
// (one head of 128), SiLU-gated MLP 96, no biases, the shared modulations; `channels` patched
// latent channels in and out, text width `context`, and dev's guidance_in when `guidance`.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "test_util.h"

namespace sd::test {

struct TinyFlux2Shape {
    int64_t channels = 8;
    int64_t context = 24;
    bool guidance = false;
};

inline std::map<std::string, Tensor> tiny_flux2(int depth, int single,
                                                const TinyFlux2Shape& shape = {}) {
    constexpr int64_t C = 128, kMlp = 96;
    std::map<std::string, Tensor> p;
    uint32_t seed = 300;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in));
        p[name + ".weight"] = random_tensor({out, in}, seed++, -bound, bound);
    };
    auto qk_norm = [&](const std::string& name) {
        p[name + ".query_norm.scale"] = random_tensor({128}, seed++, 0.5f, 1.5f);
        p[name + ".key_norm.scale"] = random_tensor({128}, seed++, 0.5f, 1.5f);
    };
    linear("img_in", shape.channels, C);
    linear("txt_in", shape.context, C);
    linear("time_in.in_layer", 256, C);
    linear("time_in.out_layer", C, C);
    linear("double_stream_modulation_img.lin", C, 6 * C);
    linear("double_stream_modulation_txt.lin", C, 6 * C);
    linear("single_stream_modulation.lin", C, 3 * C);
    for (int i = 0; i < depth; ++i) {
        const std::string b = "double_blocks." + std::to_string(i) + ".";
        for (const char* s : {"img", "txt"}) {
            linear(b + s + "_attn.qkv", C, 3 * C);
            linear(b + s + "_attn.proj", C, C);
            qk_norm(b + s + "_attn.norm");
            linear(b + s + "_mlp.0", C, 2 * kMlp);
            linear(b + s + "_mlp.2", kMlp, C);
        }
    }
    for (int i = 0; i < single; ++i) {
        const std::string b = "single_blocks." + std::to_string(i) + ".";
        linear(b + "linear1", C, 3 * C + 2 * kMlp);
        linear(b + "linear2", C + kMlp, C);
        qk_norm(b + "norm");
    }
    linear("final_layer.adaLN_modulation.1", C, 2 * C);
    linear("final_layer.linear", C, shape.channels);
    if (shape.guidance) {
        p["guidance_in.in_layer.weight"] = random_tensor({C, 256}, seed++, -0.06f, 0.06f);
        p["guidance_in.out_layer.weight"] = random_tensor({C, C}, seed++, -0.09f, 0.09f);
    }
    return p;
}

}  // namespace sd::test
