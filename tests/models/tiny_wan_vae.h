// Tiny random Wan VAEs (2.1 and 2.2 structure, widths 4 .. 24, z latent channels) under
// Wan's tensor names, initialised as torch's layers are: the VAE tests' models and the video
// path tests' codecs.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "test_util.h"

namespace sd::test {

constexpr int64_t kTinyVaeDim = 4;
constexpr int64_t kTinyVaeDecDim22 = 6;  // 2.2's decoder: another width than the encoder's

// Random weights under Wan's names, initialised as torch's layers are.
struct TinyVaeParams {
    std::map<std::string, Tensor> p;
    uint32_t seed = 300;

    void conv(const std::string& name, int64_t in, int64_t out, Shape kernel) {
        int64_t fan_in = in;
        for (int64_t k : kernel) fan_in *= k;
        const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
        Shape shape = {out, in};
        for (int64_t k : kernel) shape.push_back(k);
        p[name + ".weight"] = random_tensor(shape, seed++, -bound, bound);
        p[name + ".bias"] = random_tensor({out}, seed++, -0.1f, 0.1f);
    }
    void norm(const std::string& name, int64_t c, Shape tail = {1, 1, 1}) {
        Shape shape = {c};
        for (int64_t k : tail) shape.push_back(k);
        p[name + ".gamma"] = random_tensor(shape, seed++, 0.5f, 1.5f);
    }
    void residual(const std::string& name, int64_t in, int64_t out) {
        norm(name + ".residual.0", in);
        conv(name + ".residual.2", in, out, {3, 3, 3});
        norm(name + ".residual.3", out);
        conv(name + ".residual.6", out, out, {3, 3, 3});
        if (in != out) conv(name + ".shortcut", in, out, {1, 1, 1});
    }
    void middle(const std::string& name, int64_t c) {
        residual(name + ".0", c, c);
        norm(name + ".1.norm", c, {1, 1});
        conv(name + ".1.to_qkv", c, 3 * c, {1, 1});
        conv(name + ".1.proj", c, c, {1, 1});
        residual(name + ".2", c, c);
    }
};

// colors = 4: Qwen-Image-Layered's RGBA VAE (frames of 4 channels in and out).
struct TinyWanVae : TinyVaeParams {
    explicit TinyWanVae(int64_t kZ = 4, int64_t colors = 3) {
        // Encoder: widths 4, 4, 8, 16, 16; downsamples 2, 5 (time too), 8 (time too).
        conv("encoder.conv1", colors, kTinyVaeDim, {3, 3, 3});
        const int64_t enc[] = {kTinyVaeDim, kTinyVaeDim, 2 * kTinyVaeDim, 4 * kTinyVaeDim,
                               4 * kTinyVaeDim};
        int index = 0;
        for (int i = 0; i < 4; ++i) {
            int64_t in = enc[i];
            for (int j = 0; j < 2; ++j, in = enc[i + 1])
                residual("encoder.downsamples." + std::to_string(index++), in, enc[i + 1]);
            if (i == 3) break;
            const std::string r = "encoder.downsamples." + std::to_string(index++);
            conv(r + ".resample.1", enc[i + 1], enc[i + 1], {3, 3});
            if (i > 0) conv(r + ".time_conv", enc[i + 1], enc[i + 1], {3, 1, 1});
        }
        middle("encoder.middle", 4 * kTinyVaeDim);
        norm("encoder.head.0", 4 * kTinyVaeDim);
        conv("encoder.head.2", 4 * kTinyVaeDim, 2 * kZ, {3, 3, 3});
        conv("conv1", 2 * kZ, 2 * kZ, {1, 1, 1});
        conv("conv2", kZ, kZ, {1, 1, 1});
        // Decoder: widths 16, 16, 16, 8, 4; upsamples 3, 7 (time too), 11.
        conv("decoder.conv1", kZ, 4 * kTinyVaeDim, {3, 3, 3});
        middle("decoder.middle", 4 * kTinyVaeDim);
        const int64_t dec[] = {4 * kTinyVaeDim, 4 * kTinyVaeDim, 4 * kTinyVaeDim, 2 * kTinyVaeDim,
                               kTinyVaeDim};
        index = 0;
        for (int i = 0; i < 4; ++i) {
            int64_t in = i == 0 ? dec[i] : dec[i] / 2;
            for (int j = 0; j < 3; ++j, in = dec[i + 1])
                residual("decoder.upsamples." + std::to_string(index++), in, dec[i + 1]);
            if (i == 3) break;
            const std::string r = "decoder.upsamples." + std::to_string(index++);
            conv(r + ".resample.1", dec[i + 1], dec[i + 1] / 2, {3, 3});
            if (i < 2) conv(r + ".time_conv", dec[i + 1], 2 * dec[i + 1], {3, 1, 1});
        }
        norm("decoder.head.0", kTinyVaeDim);
        conv("decoder.head.2", kTinyVaeDim, colors, {3, 3, 3});
    }
};

// Wan 2.2's structure at tiny widths: 12 patchified channels in and out, each level's blocks
// and resample in a list of its own (Down_ResidualBlock / Up_ResidualBlock), upsamplers that
// keep the width.
struct TinyWan22Vae : TinyVaeParams {
    explicit TinyWan22Vae(int64_t kZ = 4) {
        seed = 700;
        // Encoder: widths 4, 4, 8, 16, 16; levels 1 and 2 halve time too.
        conv("encoder.conv1", 12, kTinyVaeDim, {3, 3, 3});
        const int64_t enc[] = {kTinyVaeDim, kTinyVaeDim, 2 * kTinyVaeDim, 4 * kTinyVaeDim,
                               4 * kTinyVaeDim};
        for (int i = 0; i < 4; ++i) {
            const std::string level = "encoder.downsamples." + std::to_string(i) + ".downsamples.";
            residual(level + "0", enc[i], enc[i + 1]);
            residual(level + "1", enc[i + 1], enc[i + 1]);
            if (i == 3) break;
            conv(level + "2.resample.1", enc[i + 1], enc[i + 1], {3, 3});
            if (i > 0) conv(level + "2.time_conv", enc[i + 1], enc[i + 1], {3, 1, 1});
        }
        middle("encoder.middle", 4 * kTinyVaeDim);
        norm("encoder.head.0", 4 * kTinyVaeDim);
        conv("encoder.head.2", 4 * kTinyVaeDim, 2 * kZ, {3, 3, 3});
        conv("conv1", 2 * kZ, 2 * kZ, {1, 1, 1});
        conv("conv2", kZ, kZ, {1, 1, 1});
        // Decoder: widths 24, 24, 24, 12, 6; levels 0 and 1 double time too.
        const int64_t dec[] = {4 * kTinyVaeDecDim22, 4 * kTinyVaeDecDim22, 4 * kTinyVaeDecDim22,
                               2 * kTinyVaeDecDim22, kTinyVaeDecDim22};
        conv("decoder.conv1", kZ, dec[0], {3, 3, 3});
        middle("decoder.middle", dec[0]);
        for (int i = 0; i < 4; ++i) {
            const std::string level = "decoder.upsamples." + std::to_string(i) + ".upsamples.";
            for (int j = 0; j < 3; ++j)
                residual(level + std::to_string(j), j == 0 ? dec[i] : dec[i + 1], dec[i + 1]);
            if (i == 3) break;
            conv(level + "3.resample.1", dec[i + 1], dec[i + 1], {3, 3});
            if (i < 2) conv(level + "3.time_conv", dec[i + 1], 2 * dec[i + 1], {3, 1, 1});
        }
        norm("decoder.head.0", kTinyVaeDecDim22);
        conv("decoder.head.2", kTinyVaeDecDim22, 12, {3, 3, 3});
    }
};

}  // namespace sd::test
