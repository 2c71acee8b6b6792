#!/usr/bin/env python3
"""An independent Chroma-Radiance forward pass in numpy (float64), written from ComfyUI's
comfy/ldm/chroma_radiance (NerfEmbedder, NerfGLUBlock, NerfFinalLayerConv, the x0 and 32x32
variants) and the layout stable-diffusion.cpp's flux.hpp reads, on flux_reference.py's
transformer and chroma_reference.py's modulation table, for
tests/models/chroma_radiance_test.cpp.

Usage: chroma_radiance_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds Chroma-Radiance weights (f32, no prefix); INPUTS holds x [1, 3, H, W], t [1],
context [1, L, D] and optionally mask [L] (added to the text keys' scores). OUT receives the
flow velocity [1, 3, H, W] as raw little-endian f32.

The image is padded with zeros to whole patches (16, or 32 with __32x32__, where the patch
embedding reads the padded image downscaled by 2 with bilinear filtering: the mean of each
2x2 block). Each patch's final transformer state generates its NeRF blocks' weights; the
decoded features of every pixel go through an RMS norm over channels and a 3x3 convolution.
With __x0__ the model's output is the clean image, returned as (x - x0) / t."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chroma_reference as chroma  # noqa: E402
import flux_reference as flux  # noqa: E402


def position_code(P, F):
    """NerfEmbedder.fetch_pos: [P * P, F * F]."""
    pos = np.linspace(0.0, 1.0, P)
    pos_y, pos_x = np.meshgrid(pos, pos, indexing="ij")
    pos_x, pos_y = pos_x.reshape(-1, 1, 1), pos_y.reshape(-1, 1, 1)
    freqs = np.arange(F, dtype=np.float64)
    fx, fy = freqs[None, :, None], freqs[None, None, :]
    coeffs = 1.0 / (1.0 + fx * fy)
    return (np.cos(pos_x * fx * np.pi) * np.cos(pos_y * fy * np.pi) * coeffs).reshape(P * P, F * F)


def normalize(m, axis):  # F.normalize
    return m / np.maximum(np.sqrt((m ** 2).sum(axis, keepdims=True)), 1e-12)


def conv3x3(x, w, b):  # x [C, H, W], w [O, C, 3, 3]
    C, H, W = x.shape
    pad = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((w.shape[0], H, W))
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("oc,chw->ohw", w[:, :, ky, kx], pad[:, ky:ky + H, kx:kx + W])
    return out + b[:, None, None]


def forward(W, x, t, ctx, mask=None):
    def linear(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    P = 32 if "__32x32__" in W else 16
    C, H, Wd = x.shape[1:]
    img = np.pad(x[0], ((0, 0), (0, (-H) % P), (0, (-Wd) % P)))
    Hp, Wp = img.shape[1:]
    h, w = Hp // P, Wp // P
    small = img if P == 16 else 0.25 * (img[:, 0::2, 0::2] + img[:, 1::2, 0::2] +
                                         img[:, 0::2, 1::2] + img[:, 1::2, 1::2])
    conv = W["img_in_patch.weight"]
    tokens = flux.patches(small, 16)[0] @ conv.reshape(conv.shape[0], -1).T + W["img_in_patch.bias"]
    mod = chroma.chroma_modulation(chroma.table(W, t[0], 0.0))
    s = flux.transformer(W, tokens, ctx, h, w, mod, mask)  # [patches, hidden]

    nh = W["nerf_image_embedder.embedder.0.weight"].shape[0]
    F = int(round(np.sqrt(W["nerf_image_embedder.embedder.0.weight"].shape[1] - C)))
    n = h * w
    pixels = flux.patches(img, P)[0].reshape(n, C, P * P).transpose(0, 2, 1)  # [n, P^2, C]
    code = np.broadcast_to(position_code(P, F)[None], (n, P * P, F * F))
    xx = linear("nerf_image_embedder.embedder.0", np.concatenate([pixels, code], -1))
    depth = len({k.split(".")[1] for k in W if k.startswith("nerf_blocks.")})
    for i in range(depth):
        b = "nerf_blocks.%d." % i
        params = linear(b + "param_generator", s)
        ratio = params.shape[1] // (3 * nh * nh)
        g, v, o = np.split(params, 3, axis=-1)
        g = normalize(g.reshape(n, nh, nh * ratio), -2)
        v = normalize(v.reshape(n, nh, nh * ratio), -2)
        o = normalize(o.reshape(n, nh * ratio, nh), -2)
        xn = flux.rms_norm(xx, W[b + "norm.scale"])
        xx = xx + (flux.silu(xn @ g) * (xn @ v)) @ o

    feat = xx.reshape(h, w, P, P, nh).transpose(4, 0, 2, 1, 3).reshape(nh, Hp, Wp)
    feat = feat / np.sqrt((feat ** 2).mean(0, keepdims=True) + 1e-6)
    feat = feat * W["nerf_final_layer_conv.norm.scale"][:, None, None]
    out = conv3x3(feat, W["nerf_final_layer_conv.conv.weight"], W["nerf_final_layer_conv.conv.bias"])
    if "__x0__" in W:
        out = (img - out) / t[0]
    return out[:, :H, :Wd][None]


def main():
    W = flux.load(sys.argv[1])
    i = flux.load(sys.argv[2])
    out = forward(W, i["x"], i["t"], i["context"], i.get("mask"))
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
