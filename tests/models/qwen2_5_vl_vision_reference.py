#!/usr/bin/env python3
"""An independent Qwen2.5-VL vision tower in numpy (float64), written from transformers'
modeling_qwen2_5_vl.py (Qwen2_5_VisionPatchEmbed, VisionRotaryEmbedding, rot_pos_emb,
get_window_index, Qwen2_5_VLVisionBlock, Qwen2_5_VLPatchMerger) and the image processor's
patch flattening, for tests/models/qwen2_5_vl_vision_test.cpp. One difference from transformers,
as the reference program does: the merger's GELU is the tanh approximation.

Usage: qwen2_5_vl_vision_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds the tower (f32, names visual.*); INPUTS holds "pixels" [1, 3, H, W] (normalised,
H and W multiples of patch * merge), "heads" [1], "window" [1] (pixels) and "fullatt" [k] (the
full-attention blocks; k may be 0). OUT receives the merger's output [units, out_width] in the
units' row-major order, as raw little-endian f32."""
import sys

import numpy as np

from flux_reference import load  # f32 safetensors reader


def rms(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def flatten_patches(pixels, T, p, m):
    """The image processor: the frame repeated T times, then patches in (h/m, w/m, m, m) order,
    each (C, T, p, p) flattened."""
    _, C, H, W = pixels.shape
    frames = np.repeat(pixels, T, axis=0)  # [T, C, H, W]
    gh, gw = H // p, W // p
    x = frames.reshape(1, T, C, gh // m, m, p, gw // m, m, p)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gh * gw, C * T * p * p), gh, gw


def rot_pos_emb(gh, gw, m, head_dim, theta=10000.0):
    """[patches, head_dim / 2]: the row's frequencies, then the column's."""
    dim = head_dim // 2
    inv_freq = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    hpos = np.repeat(np.arange(gh)[:, None], gw, axis=1)
    wpos = np.repeat(np.arange(gw)[None, :], gh, axis=0)
    hpos = hpos.reshape(gh // m, m, gw // m, m).transpose(0, 2, 1, 3).reshape(-1)
    wpos = wpos.reshape(gh // m, m, gw // m, m).transpose(0, 2, 1, 3).reshape(-1)
    return np.concatenate([np.outer(hpos, inv_freq), np.outer(wpos, inv_freq)], axis=1)


def window_index(gh, gw, m, window, p):
    """transformers' get_window_index for one image: the unit grid padded with -100 to whole
    windows, cut into windows, the padding dropped; cumulative patch counts."""
    ws = window // m // p
    lh, lw = gh // m, gw // m
    index = np.arange(lh * lw).reshape(lh, lw)
    ph, pw = (ws - lh % ws) % ws, (ws - lw % ws) % ws
    nh, nw = (lh + ph) // ws, (lw + pw) // ws
    padded = np.pad(index, ((0, ph), (0, pw)), constant_values=-100)
    padded = padded.reshape(nh, ws, nw, ws).transpose(0, 2, 1, 3).reshape(nh * nw, ws, ws)
    seqlens = (padded != -100).sum(axis=(1, 2)).reshape(-1)
    flat = padded.reshape(-1)
    cu = np.concatenate([[0], np.cumsum(seqlens * m * m)])
    return flat[flat != -100], cu


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def attention(p, name, x, heads, cos, sin, cu):
    L, D = x.shape
    qkv = (x @ p[name + ".qkv.weight"].T + p[name + ".qkv.bias"]).reshape(L, 3, heads, -1)
    q, k, v = (qkv[:, i].transpose(1, 0, 2) for i in range(3))  # [heads, L, d]
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    out = np.zeros_like(q)
    for s, e in zip(cu[:-1], cu[1:]):
        scores = q[:, s:e] @ k[:, s:e].transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        out[:, s:e] = (scores / scores.sum(-1, keepdims=True)) @ v[:, s:e]
    out = out.transpose(1, 0, 2).reshape(L, D)
    return out @ p[name + ".proj.weight"].T + p[name + ".proj.bias"]


def linear(p, name, x):
    return x @ p[name + ".weight"].T + p[name + ".bias"]


def tower(p, pixels, heads, window, fullatt):
    w5 = p["visual.patch_embed.proj.weight"]
    width, _, T, ps, _ = w5.shape
    m = int(round(np.sqrt(p["visual.merger.mlp.0.weight"].shape[1] // width)))
    tokens, gh, gw = flatten_patches(pixels, T, ps, m)
    x = tokens @ w5.reshape(width, -1).T
    unit = m * m
    emb = rot_pos_emb(gh, gw, m, width // heads)
    index, cu_window = window_index(gh, gw, m, window, ps)
    x = x.reshape(-1, unit, width)[index].reshape(-1, width)
    emb = emb.reshape(-1, unit, emb.shape[-1])[index].reshape(-1, emb.shape[-1])
    emb = np.concatenate([emb, emb], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    cu_full = np.array([0, x.shape[0]])
    depth = 0
    while "visual.blocks.%d.norm1.weight" % depth in p:
        depth += 1
    for i in range(depth):
        b = "visual.blocks.%d" % i
        cu = cu_full if i in fullatt else cu_window
        x = x + attention(p, b + ".attn", rms(x, p[b + ".norm1.weight"]), heads, cos, sin, cu)
        h = rms(x, p[b + ".norm2.weight"])
        g = linear(p, b + ".mlp.gate_proj", h)
        x = x + linear(p, b + ".mlp.down_proj", g / (1 + np.exp(-g)) * linear(p, b + ".mlp.up_proj", h))
    x = rms(x, p["visual.merger.ln_q.weight"]).reshape(-1, unit * width)
    x = linear(p, "visual.merger.mlp.2", gelu_tanh(linear(p, "visual.merger.mlp.0", x)))
    return x[np.argsort(index)]


def main():
    p = load(sys.argv[1])
    inputs = load(sys.argv[2])
    fullatt = {int(v) for v in inputs.get("fullatt", np.zeros(0)).reshape(-1)}
    out = tower(p, inputs["pixels"], int(inputs["heads"][0]), int(inputs["window"][0]), fullatt)
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
