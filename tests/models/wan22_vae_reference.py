#!/usr/bin/env python3
"""An independent Wan 2.2 VAE in numpy (float64), written from Wan2.2's wan/modules/vae2_2.py
(patchify / unpatchify, AvgDown3D, DupUp3D, Down_ResidualBlock, Up_ResidualBlock, Encoder3d,
Decoder3d and WanVAE_'s chunked encode / decode), for tests/models/wan_vae_test.cpp. The layers
2.2 shares with 2.1 (causal convolutions and their cache, RMS norms, residual and attention
blocks, resamples) come from wan_vae_reference.py.

Usage: wan22_vae_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds the VAE's weights (f32, Wan's names); INPUTS holds either "video" [C=3, T, H, W]
(encoded: OUT receives the latent mean [z, 1 + (T - 1) / 4, H / 16, W / 16]) or "latent"
[z, T, h, w] (decoded: OUT receives [3, 1 + 4 (T - 1), 16 h, 16 w]), as raw little-endian f32.

Layout: [C, T, H, W] throughout (one video, Wan's batch of one)."""
import sys

import numpy as np

import wan_vae_reference as wan21
from wan_vae_reference import attention_block, load, resample, residual_block, rms_norm, silu

PATCH = 2
MULT = [1, 2, 4, 4]
RES_BLOCKS = 2
# Wan2_2_VAE's temperal_downsample; the decoder's is its reverse.
TEMPORAL_DOWN = [False, True, True]
TEMPORAL_UP = TEMPORAL_DOWN[::-1]


def patchify(x, p):
    """einops "c f (h q) (w r) -> (c r q) f h w"."""
    C, T, H, W = x.shape
    x = x.reshape(C, T, H // p, p, W // p, p)  # c f h q w r
    return x.transpose(0, 5, 3, 1, 2, 4).reshape(C * p * p, T, H // p, W // p)


def unpatchify(x, p):
    """einops "(c r q) f h w -> c f (h q) (w r)"."""
    CP, T, H, W = x.shape
    x = x.reshape(CP // (p * p), p, p, T, H, W)  # c r q f h w
    return x.transpose(0, 3, 4, 2, 5, 1).reshape(CP // (p * p), T, H * p, W * p)


def avg_down3d(x, out_channels, ft, fs):
    """AvgDown3D: frames padded in front to a multiple of ft, each ft x fs x fs block folded
    into channels (c, t-offset, h-offset, w-offset), groups of channels averaged."""
    C = x.shape[0]
    pad_t = (ft - x.shape[1] % ft) % ft
    x = np.pad(x, ((0, 0), (pad_t, 0), (0, 0), (0, 0)))
    _, T, H, W = x.shape
    x = x.reshape(C, T // ft, ft, H // fs, fs, W // fs, fs)
    x = x.transpose(0, 2, 4, 6, 1, 3, 5)  # c, ft, fs, fs, t, h, w
    x = x.reshape(C * ft * fs * fs, T // ft, H // fs, W // fs)
    group = C * ft * fs * fs // out_channels
    return x.reshape(out_channels, group, T // ft, H // fs, W // fs).mean(axis=1)


def dup_up3d(x, out_channels, ft, fs, first_chunk):
    """DupUp3D: channels repeat_interleave'd, then unfolded (c, t-offset, h-offset, w-offset)
    into frames and pixels; the first chunk drops its first ft - 1 frames."""
    C, T, H, W = x.shape
    repeats = out_channels * ft * fs * fs // C
    x = np.repeat(x, repeats, axis=0)
    x = x.reshape(out_channels, ft, fs, fs, T, H, W)
    x = x.transpose(0, 4, 1, 5, 2, 6, 3)  # c, t, ft, h, fs, w, fs
    x = x.reshape(out_channels, T * ft, H * fs, W * fs)
    if first_chunk:
        x = x[:, ft - 1:]
    return x


def encoder(p, x, cache, chunk):
    dim = p["encoder.conv1.weight"].shape[0]
    dims = [dim * m for m in [1] + MULT]
    x = cache.conv(p, "encoder.conv1", x, (1, 1, 1))
    for i in range(len(MULT)):
        name = "encoder.downsamples.%d.downsamples." % i
        t_down = TEMPORAL_DOWN[i] if i < len(TEMPORAL_DOWN) else False
        down = i != len(MULT) - 1
        x_copy = x
        for j in range(RES_BLOCKS):
            x = residual_block(p, name + str(j), x, cache)
        if down:
            mode = "downsample3d" if t_down else "downsample2d"
            x = resample(p, name + str(RES_BLOCKS), x, mode, cache, chunk)
        x = x + avg_down3d(x_copy, dims[i + 1], 2 if t_down else 1, 2 if down else 1)
    x = residual_block(p, "encoder.middle.0", x, cache)
    x = attention_block(p, "encoder.middle.1", x)
    x = residual_block(p, "encoder.middle.2", x, cache)
    x = silu(rms_norm(p, "encoder.head.0", x))
    return cache.conv(p, "encoder.head.2", x, (1, 1, 1))


def decoder(p, x, cache, chunk):
    dec_dim = p["decoder.head.2.weight"].shape[1]
    dims = [dec_dim * m for m in [MULT[-1]] + MULT[::-1]]
    x = cache.conv(p, "decoder.conv1", x, (1, 1, 1))
    x = residual_block(p, "decoder.middle.0", x, cache)
    x = attention_block(p, "decoder.middle.1", x)
    x = residual_block(p, "decoder.middle.2", x, cache)
    for i in range(len(MULT)):
        name = "decoder.upsamples.%d.upsamples." % i
        t_up = TEMPORAL_UP[i] if i < len(TEMPORAL_UP) else False
        up = i != len(MULT) - 1
        x_main = x
        for j in range(RES_BLOCKS + 1):
            x_main = residual_block(p, name + str(j), x_main, cache)
        if up:
            mode = "upsample3d" if t_up else "upsample2d"
            x_main = resample(p, name + str(RES_BLOCKS + 1), x_main, mode, cache, chunk)
            x_main = x_main + dup_up3d(x, dims[i + 1], 2 if t_up else 1, 2, chunk == 0)
        x = x_main
    x = silu(rms_norm(p, "decoder.head.0", x))
    return cache.conv(p, "decoder.head.2", x, (1, 1, 1))


def encode(p, video):
    return wan21.encode(p, patchify(video, PATCH), encoder)


def decode(p, z):
    return unpatchify(wan21.decode(p, z, decoder), PATCH)


def main():
    p = load(sys.argv[1])
    inputs = load(sys.argv[2])
    if "video" in inputs:
        out = encode(p, inputs["video"])
    else:
        out = decode(p, inputs["latent"])
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
