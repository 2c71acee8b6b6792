// Small ESRGAN checkpoints for tests: random weights in a chosen layout (block count, width,
// upsampling stages, pixel-unshuffled input, BasicSR or original ESRGAN names, a prefix),
// written as safetensors. The weights come back under BasicSR names for independent checks.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "io/tensor_writer.h"
#include "test_util.h"

namespace sd::test {

struct TinyEsrgan {
    int blocks = 2;
    int64_t feat = 8, grow = 4;
    int64_t in_channels = 3;  // 12: a 2x pixel-unshuffled input
    int upsamples = 2;
    bool original_names = false;
    std::string prefix;  // "", "params_ema."
};

// BasicSR name -> ESRGAN's original name.
inline std::string original_esrgan_name(const std::string& name, const TinyEsrgan& t) {
    auto rest = [&](const std::string& head) { return name.substr(head.size()); };
    if (name.rfind("conv_first.", 0) == 0) return "model.0." + rest("conv_first.");
    if (name.rfind("conv_body.", 0) == 0)
        return "model.1.sub." + std::to_string(t.blocks) + "." + rest("conv_body.");
    if (name.rfind("conv_up1.", 0) == 0) return "model.3." + rest("conv_up1.");
    if (name.rfind("conv_up2.", 0) == 0) return "model.6." + rest("conv_up2.");
    if (name.rfind("conv_hr.", 0) == 0)
        return "model." + std::to_string(2 + 3 * t.upsamples) + "." + rest("conv_hr.");
    if (name.rfind("conv_last.", 0) == 0)
        return "model." + std::to_string(4 + 3 * t.upsamples) + "." + rest("conv_last.");
    // body.N.rdbK.convJ.P -> model.1.sub.N.RDBK.convJ.0.P
    const size_t rdb = name.find(".rdb"), conv = name.find(".conv");
    return "model.1.sub." + name.substr(5, rdb - 5) + ".RDB" +
           name.substr(rdb + 4, conv - rdb - 4) + name.substr(conv, 6) + ".0" +
           name.substr(conv + 6);
}

// Writes the checkpoint to `path` and returns its weights under BasicSR names.
inline std::map<std::string, Tensor> write_tiny_esrgan(const std::string& path, const TinyEsrgan& t,
                                                       uint32_t seed) {
    std::map<std::string, Tensor> weights;
    auto conv = [&](const std::string& name, int64_t in, int64_t out) {
        const float a = 1.0f / std::sqrt(static_cast<float>(in * 9));
        weights[name + ".weight"] = random_tensor({out, in, 3, 3}, seed++, -a, a);
        weights[name + ".bias"] = random_tensor({out}, seed++, -0.05f, 0.05f);
    };
    conv("conv_first", t.in_channels, t.feat);
    for (int b = 0; b < t.blocks; ++b) {
        for (int r = 1; r <= 3; ++r) {
            for (int j = 1; j <= 5; ++j) {
                conv("body." + std::to_string(b) + ".rdb" + std::to_string(r) + ".conv" +
                         std::to_string(j),
                     t.feat + (j - 1) * t.grow, j < 5 ? t.grow : t.feat);
            }
        }
    }
    conv("conv_body", t.feat, t.feat);
    for (int u = 1; u <= t.upsamples; ++u) conv("conv_up" + std::to_string(u), t.feat, t.feat);
    conv("conv_hr", t.feat, t.feat);
    conv("conv_last", t.feat, 3);
    std::vector<OutputTensor> out;
    for (const auto& [name, tensor] : weights) {
        const std::string stored =
            t.prefix + (t.original_names ? original_esrgan_name(name, t) : name);
        const Tensor value = tensor;
        out.push_back({stored, DType::F32, tensor.shape(), [value] { return value; }});
    }
    write_safetensors(path, out);
    return weights;
}

}  // namespace sd::test
