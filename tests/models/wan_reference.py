#!/usr/bin/env python3
"""An independent Wan 2.1 text-to-video DiT forward pass in numpy (float64), written from the
original Wan code (wan/modules/model.py: WanModel, WanAttentionBlock, WanSelfAttention,
WanT2VCrossAttention, Head, rope_params / rope_apply, sinusoidal_embedding_1d), for
tests/models/wan_test.cpp.

Usage: wan_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds the DiT's weights (f32, original names); INPUTS holds x [1, C, T, H, W], t [1] or
[T] (sigma * 1000, embedded as given; one per frame as Wan2.2 TI2V, whose tokens take their
frame's time modulation) and context [1, L, text_dim]; an image-to-video model (img_emb) also reads clip [1, n, 1280],
the CLIP-vision states; a VACE model (vace_patch_embedding, wan/modules/vace_model.py:
VaceWanModel) reads vace [1, 96, T, H, W] and vace_strength [1]: its hints, computed from the
input tokens before the main blocks, are added after the main blocks range(0, depth, depth //
vace blocks). OUT receives the flow velocity
[1, C, T, H, W] as raw little-endian f32. Heads are 128 wide; the RoPE splits a head as
d - 4 (d // 6), 2 (d // 6), 2 (d // 6) over frame, row and column, theta 10000, positions from 0,
rotating consecutive pairs (complex multiplication, as rope_apply)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flux_reference import gelu_tanh, layer_norm, load, rms_norm, silu  # noqa: E402

HEAD_DIM = 128


def sinusoid(t, dim):  # sinusoidal_embedding_1d: cos first
    half = dim // 2
    f = np.power(10000.0, -np.arange(half) / half)
    return np.concatenate([np.cos(t * f), np.sin(t * f)])


def rope_angles(T, h, w, d=HEAD_DIM, theta=10000.0):
    """[T h w, d / 2] angles: the frame's, row's and column's frequencies one after another."""
    axes = [d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6)]
    f, r, c = np.meshgrid(np.arange(T), np.arange(h), np.arange(w), indexing="ij")
    pos = [f.ravel(), r.ravel(), c.ravel()]
    angles = [p[:, None] * theta ** (-np.arange(0, a, 2) / a)[None, :] for p, a in zip(pos, axes)]
    return np.concatenate(angles, 1)


def rotate(x, ang):  # x [L, H, D]: pairs (x0, x1) as x0 + i x1 times e^(i ang)
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def attention(q, k, v):  # [L, H, D] each -> [Lq, H D]
    q, k, v = (a.transpose(1, 0, 2) for a in (q, k, v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = np.exp(s - s.max(-1, keepdims=True))
    o = (s / s.sum(-1, keepdims=True)) @ v
    return o.transpose(1, 0, 2).reshape(o.shape[1], -1)


def image_tokens(W, clip):
    """Image-to-video's img_emb (MLPProj): LayerNorm, Linear, GELU (tanh, as the reference
    runs nn.GELU), Linear, LayerNorm; FLF2V adds emb_pos first."""
    c = clip[0]
    if "img_emb.emb_pos" in W:
        n = min(len(c), W["img_emb.emb_pos"].shape[1])
        c = c[:n] + W["img_emb.emb_pos"][0][:n]

    def ln(name, v):
        return layer_norm(v, 1e-5) * W[name + ".weight"] + W[name + ".bias"]

    def lin(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    c = lin("img_emb.proj.3", gelu_tanh(lin("img_emb.proj.1", ln("img_emb.proj.0", c))))
    return ln("img_emb.proj.4", c)


def forward(W, x, t, ctx, clip=None, vace=None, vace_strength=1.0):
    def lin(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    dim = W["patch_embedding.weight"].shape[0]
    heads = dim // HEAD_DIM
    depth = len({k.split(".")[1] for k in W if k.startswith("blocks.")})
    _, C, T, H, Wd = x.shape
    h, w = H // 2, Wd // 2

    # patch_embedding: Conv3d, kernel = stride = (1, 2, 2); tokens in (frame, row, column) order.
    def patches(name, v):
        k = W[name + ".weight"].reshape(dim, -1)  # (c, 1, ky, kx)
        n = v.shape[1]
        p = v[0].reshape(n, T, h, 2, w, 2).transpose(1, 2, 4, 0, 3, 5).reshape(T * h * w, n * 4)
        return p @ k.T + W[name + ".bias"]

    tok = patches("patch_embedding", x)

    ts = np.asarray(t, dtype=np.float64).reshape(-1)
    ts = ts if len(ts) == T else np.full(T, ts[0])
    freq = W["time_embedding.0.weight"].shape[1]
    emb = np.stack([sinusoid(v, freq) for v in ts])  # [T, freq]
    frame = np.repeat(np.arange(T), h * w)  # each token's frame
    e = lin("time_embedding.2", silu(lin("time_embedding.0", emb)))[frame]  # [L, dim]
    e0 = lin("time_projection.1", silu(e)).reshape(-1, 6, dim)  # [L, 6, dim]
    context = lin("text_embedding.2", gelu_tanh(lin("text_embedding.0", ctx[0])))
    img = image_tokens(W, clip) if "img_emb.proj.1.weight" in W else None
    ang = rope_angles(T, h, w)

    def split(v):
        return v.reshape(len(v), heads, HEAD_DIM)

    def block(b, tok):
        m = (W[b + "modulation"].reshape(1, 6, dim) + e0).transpose(1, 0, 2)  # [6, L, dim]
        a = b + "self_attn."
        y = layer_norm(tok) * (1 + m[1]) + m[0]
        q = rotate(split(rms_norm(lin(a + "q", y), W[a + "norm_q.weight"])), ang)
        kk = rotate(split(rms_norm(lin(a + "k", y), W[a + "norm_k.weight"])), ang)
        tok = tok + lin(a + "o", attention(q, kk, split(lin(a + "v", y)))) * m[2]
        c = b + "cross_attn."
        y = layer_norm(tok) * W[b + "norm3.weight"] + W[b + "norm3.bias"]
        q = split(rms_norm(lin(c + "q", y), W[c + "norm_q.weight"]))
        kk = split(rms_norm(lin(c + "k", context), W[c + "norm_k.weight"]))
        o = attention(q, kk, split(lin(c + "v", context)))
        if img is not None:  # WanI2VCrossAttention: the image tokens' own keys and values
            ki = split(rms_norm(lin(c + "k_img", img), W[c + "norm_k_img.weight"]))
            o = o + attention(q, ki, split(lin(c + "v_img", img)))
        tok = tok + lin(c + "o", o)
        y = layer_norm(tok) * (1 + m[4]) + m[3]
        return tok + lin(b + "ffn.2", gelu_tanh(lin(b + "ffn.0", y))) * m[5]

    hints = {}
    if "vace_patch_embedding.weight" in W:  # VaceWanModel.forward_vace
        n_vace = len({k.split(".")[1] for k in W if k.startswith("vace_blocks.")})
        layers = list(range(0, depth, depth // n_vace))
        c = patches("vace_patch_embedding", vace)
        for j in range(n_vace):
            b = "vace_blocks.%d." % j
            if j == 0:
                c = lin(b + "before_proj", c) + tok
            c = block(b, c)
            hints[layers[j]] = lin(b + "after_proj", c)
    for i in range(depth):
        tok = block("blocks.%d." % i, tok)
        if i in hints:  # BaseWanAttentionBlock: x + hints[block_id] * context_scale
            tok = tok + hints[i] * vace_strength

    shift, scale = (W["head.modulation"].reshape(1, 2, dim) + e[:, None, :]).transpose(1, 0, 2)
    out = lin("head.head", layer_norm(tok) * (1 + scale) + shift)  # [T h w, (1, 2, 2, C)]
    out_c = out.shape[1] // 4
    out = out.reshape(T, h, w, 1, 2, 2, out_c)
    return np.einsum("fhwpqrc->cfphqwr", out).reshape(out_c, T, H, Wd)[None]


def main():
    W = load(sys.argv[1])
    inp = load(sys.argv[2])
    strength = float(inp["vace_strength"][0]) if "vace_strength" in inp else 1.0
    out = forward(W, inp["x"], inp["t"], inp["context"], inp.get("clip"), inp.get("vace"), strength)
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
