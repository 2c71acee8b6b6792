#!/usr/bin/env python3
"""An independent SD3 / SD3.5 MMDiT forward pass in numpy (float64), written from
Stability's sd3 mmdit.py (PatchEmbed, cropped_pos_embed, DismantledBlock with qk_norm="rms"
and x_block_self_attn, block_mixing, FinalLayer), for tests/models/mmdit_test.cpp.

Usage: mmdit_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32 [SKIP,SKIP...]
MODEL holds MMDiT weights (f32, original names); INPUTS holds x [1, C, H, W], t [1]
(sigma * 1000), context [1, L, D] and y [1, V]. SKIP: joint blocks left out. OUT receives
the prediction [1, C, H, W] as raw little-endian f32."""
import sys

import numpy as np

from flux_reference import gelu_tanh, layer_norm, load, rms_norm, silu


def timestep_embedding(t, dim=256, max_period=10000.0):
    half = dim // 2
    freqs = np.exp(-np.log(max_period) * np.arange(half) / half)
    return np.concatenate([np.cos(t * freqs), np.sin(t * freqs)])


def attention(q, k, v):  # [L, H, D] each -> [L, H * D]
    q, k, v = (a.transpose(1, 0, 2) for a in (q, k, v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    return (s @ v).transpose(1, 0, 2).reshape(q.shape[1], -1)


def forward(W, x, t, ctx, y, skip):
    def linear(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    def mlp_embed(name, v):
        return linear(name + ".mlp.2", silu(linear(name + ".mlp.0", v)))

    hidden, C, p, _ = W["x_embedder.proj.weight"].shape
    depth = len({k.split(".")[1] for k in W if k.startswith("joint_blocks.")})
    heads = depth
    head_dim = hidden // heads

    _, _, H, Wd = x.shape
    h, w = H // p, Wd // p
    patches = x[0].reshape(C, h, p, w, p).transpose(1, 3, 0, 2, 4).reshape(h * w, C * p * p)
    img = patches @ W["x_embedder.proj.weight"].reshape(hidden, -1).T + W["x_embedder.proj.bias"]
    m = int(round(np.sqrt(W["pos_embed"].shape[1])))
    top, left = (m - h) // 2, (m - w) // 2
    pos = W["pos_embed"].reshape(m, m, hidden)[top:top + h, left:left + w].reshape(h * w, hidden)
    img = img + pos
    txt = linear("context_embedder", ctx[0])
    c = silu(mlp_embed("t_embedder", timestep_embedding(t[0])) + mlp_embed("y_embedder", y[0]))

    def qkv_of(name, v):  # -> q, k, v [L, H, D], q and k RMS-normed when the block has ln_q
        q, k, vv = linear(name + ".qkv", v).reshape(len(v), 3, heads, head_dim).transpose(1, 0, 2, 3)
        if name + ".ln_q.weight" in W:
            q, k = rms_norm(q, W[name + ".ln_q.weight"]), rms_norm(k, W[name + ".ln_k.weight"])
        return q, k, vv

    def modulate(v, shift, scale):
        return layer_norm(v) * (1 + scale) + shift

    def mlp(name, v):
        return linear(name + ".mlp.fc2", gelu_tanh(linear(name + ".mlp.fc1", v)))

    for i in range(depth):
        if i in skip:
            continue
        b = "joint_blocks.%d." % i
        cb, xb = b + "context_block", b + "x_block"
        pre_only = i == depth - 1
        cm = linear(cb + ".adaLN_modulation.1", c).reshape(-1, hidden)
        xm = linear(xb + ".adaLN_modulation.1", c).reshape(-1, hidden)
        cq, ck, cv = qkv_of(cb + ".attn", modulate(txt, cm[0], cm[1]))
        xq, xk, xv = qkv_of(xb + ".attn", modulate(img, xm[0], xm[1]))
        a = attention(np.concatenate([cq, xq]), np.concatenate([ck, xk]), np.concatenate([cv, xv]))
        lt = len(txt)
        new_img = img + xm[2] * linear(xb + ".attn.proj", a[lt:])
        if xb + ".attn2.qkv.weight" in W:  # x_block_self_attn: chunks 6, 7, 8
            a2 = attention(*qkv_of(xb + ".attn2", modulate(img, xm[6], xm[7])))
            new_img = new_img + xm[8] * linear(xb + ".attn2.proj", a2)
        img = new_img + xm[5] * mlp(xb, modulate(new_img, xm[3], xm[4]))
        if not pre_only:
            txt = txt + cm[2] * linear(cb + ".attn.proj", a[:lt])
            txt = txt + cm[5] * mlp(cb, modulate(txt, cm[3], cm[4]))

    fm = linear("final_layer.adaLN_modulation.1", c).reshape(2, hidden)
    out = linear("final_layer.linear", modulate(img, fm[0], fm[1]))
    return out.reshape(h, w, p, p, C).transpose(4, 0, 2, 1, 3).reshape(1, C, h * p, w * p)


def main():
    W = load(sys.argv[1])
    i = load(sys.argv[2])
    skip = [int(s) for s in sys.argv[4].split(",")] if len(sys.argv) > 4 else []
    out = forward(W, i["x"], i["t"], i["context"], i["y"], skip)
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
