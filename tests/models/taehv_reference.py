#!/usr/bin/env python3
"""An independent TAEHV in numpy (float64), written from madebyollin's taehv.py (conv,
Clamp, MemBlock, TPool, TGrow, the encoder and decoder Sequentials run over all frames at once,
pixel_unshuffle / pixel_shuffle for the patch), for tests/models/taehv_test.cpp.

Usage: taehv_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds the weights (f32, decoder.N.*, encoder.N.*); INPUTS holds either "latent"
[T, z, h, w] (decoded: OUT receives the frames [4 T - 3, 3, H, W]) or "frames" [F, 3, H, W]
in [0, 1] (encoded: OUT receives [ceil(F / 4), z, h, w]), as raw little-endian f32.

Layout: frames as the batch, [N T, C, H, W] (one clip)."""
import sys

import numpy as np

from flux_reference import load  # f32 safetensors reader


def conv(p, name, x, stride=1):
    """nn.Conv2d with padding k // 2 on x [N, I, H, W]."""
    w = p[name + ".weight"]
    O, I, k, _ = w.shape
    pad = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    H = (x.shape[2] + 2 * pad - k) // stride + 1
    W = (x.shape[3] + 2 * pad - k) // stride + 1
    out = np.zeros((x.shape[0], O, H, W))
    for a in range(k):
        for b in range(k):
            patch = xp[:, :, a:a + stride * (H - 1) + 1:stride, b:b + stride * (W - 1) + 1:stride]
            out += np.einsum("oi,nihw->nohw", w[:, :, a, b], patch)
    if name + ".bias" in p:
        out += p[name + ".bias"][None, :, None, None]
    return out


def relu(x):
    return np.maximum(x, 0.0)


def mem_block(p, name, x):
    """MemBlock: conv(cat(x, past)) ... + skip(x); past = the previous frame's x (0 first)."""
    past = np.concatenate([np.zeros_like(x[:1]), x[:-1]], axis=0)
    h = relu(conv(p, name + ".conv.0", np.concatenate([x, past], axis=1)))
    h = relu(conv(p, name + ".conv.2", h))
    h = conv(p, name + ".conv.4", h)
    skip = conv(p, name + ".skip", x) if name + ".skip.weight" in p else x
    return relu(h + skip)


def tpool(p, name, x, stride):
    """TPool: x.reshape(-1, C * stride, H, W), then a 1x1 conv."""
    NT, C, H, W = x.shape
    return conv(p, name + ".conv", x.reshape(NT // stride, C * stride, H, W))


def tgrow(p, name, x, stride):
    """TGrow: a 1x1 conv, then x.reshape(-1, C, H, W)."""
    NT, C, H, W = x.shape
    return conv(p, name + ".conv", x).reshape(NT * stride, C, H, W)


def upsample(x):
    return x.repeat(2, axis=2).repeat(2, axis=3)


def pixel_unshuffle(x, r):
    N, C, H, W = x.shape
    x = x.reshape(N, C, H // r, r, W // r, r).transpose(0, 1, 3, 5, 2, 4)
    return x.reshape(N, C * r * r, H // r, W // r)


def pixel_shuffle(x, r):
    N, C, H, W = x.shape
    x = x.reshape(N, C // (r * r), r, r, H, W).transpose(0, 1, 4, 2, 5, 3)
    return x.reshape(N, C // (r * r), H * r, W * r)


def decode(p, z):
    patch = 2 if p["decoder.22.weight"].shape[0] == 12 else 1
    x = np.tanh(z / 3.0) * 3.0                       # 0 Clamp
    x = relu(conv(p, "decoder.1", x))                 # 1, 2
    i = 3
    for stride in (1, 2, 2):
        for _ in range(3):
            x = mem_block(p, f"decoder.{i}", x)
            i += 1
        x = upsample(x)                               # Upsample
        i += 1
        x = tgrow(p, f"decoder.{i}", x, stride)
        i += 1
        x = conv(p, f"decoder.{i}", x)
        i += 1
    x = conv(p, "decoder.22", relu(x))                # 21 ReLU, 22
    if patch > 1:
        x = pixel_shuffle(x, patch)
    return x[3:]                                      # the first 3 frames dropped


def encode(p, frames):
    patch = 2 if p["encoder.0.weight"].shape[1] == 12 else 1
    x = frames
    if x.shape[0] % 4:
        x = np.concatenate([x] + [x[-1:]] * (4 - x.shape[0] % 4), axis=0)
    if patch > 1:
        x = pixel_unshuffle(x, patch)
    x = relu(conv(p, "encoder.0", x))
    i = 2
    for stride in (2, 2, 1):
        x = tpool(p, f"encoder.{i}", x, stride)
        x = conv(p, f"encoder.{i + 1}", x, stride=2)
        i += 2
        for _ in range(3):
            x = mem_block(p, f"encoder.{i}", x)
            i += 1
    return conv(p, "encoder.17", x)


def main():
    p = load(sys.argv[1])
    inputs = load(sys.argv[2])
    out = decode(p, inputs["latent"]) if "latent" in inputs else encode(p, inputs["frames"])
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
