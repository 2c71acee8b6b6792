// Random TAEHV weights (the full structure: its widths are fixed) under the names of
// taew2_1 / taew2_2 (decoder.N.*, encoder.N.*), initialised as torch's layers are: the TAEHV
// tests' models and the video codec tests' --taesd file.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "io/io_test_util.h"
#include "test_util.h"

namespace sd::test {

struct TinyTaehvParams {
    std::map<std::string, Tensor> p;
    uint32_t seed = 700;

    void conv(const std::string& name, int64_t in, int64_t out, int64_t k, bool bias = true) {
        const float bound = 1.0f / std::sqrt(static_cast<float>(in * k * k));
        p[name + ".weight"] = random_tensor({out, in, k, k}, seed++, -bound, bound);
        if (bias) p[name + ".bias"] = random_tensor({out}, seed++, -0.1f, 0.1f);
    }
    void mem_block(const std::string& name, int64_t c) {
        conv(name + ".conv.0", 2 * c, c, 3);
        conv(name + ".conv.2", c, c, 3);
        conv(name + ".conv.4", c, c, 3);
    }
};

// The TAEHV of `latent_channels` (16: Wan 2.1, 48: Wan 2.2 with 2x2 patches), its encoder
// too when asked, written to a temporary file; returns its path.
inline std::string tiny_taehv(int64_t latent_channels, bool with_encoder, const std::string& name) {
    const int64_t patch = latent_channels == 48 ? 2 : 1;
    TinyTaehvParams t;
    const int64_t widths[] = {256, 128, 64, 64};
    const int64_t strides[] = {1, 2, 2};
    t.conv("decoder.1", latent_channels, widths[0], 3);
    int index = 3;
    for (int s = 0; s < 3; ++s) {
        for (int b = 0; b < 3; ++b) t.mem_block("decoder." + std::to_string(index++), widths[s]);
        ++index;  // Upsample
        t.conv("decoder." + std::to_string(index++) + ".conv", widths[s], widths[s] * strides[s], 1,
               false);
        t.conv("decoder." + std::to_string(index++), widths[s], widths[s + 1], 3, false);
    }
    t.conv("decoder.22", widths[3], 3 * patch * patch, 3);
    if (with_encoder) {
        const int64_t pools[] = {2, 2, 1};
        t.conv("encoder.0", 3 * patch * patch, 64, 3);
        index = 2;
        for (int s = 0; s < 3; ++s) {
            t.conv("encoder." + std::to_string(index++) + ".conv", 64 * pools[s], 64, 1, false);
            t.conv("encoder." + std::to_string(index++), 64, 64, 3, false);
            for (int b = 0; b < 3; ++b) t.mem_block("encoder." + std::to_string(index++), 64);
        }
        t.conv("encoder.17", 64, latent_channels, 3);
    }
    return write_f32_safetensors(t.p, name);
}

}  // namespace sd::test
