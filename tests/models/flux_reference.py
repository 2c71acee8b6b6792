#!/usr/bin/env python3
"""An independent FLUX.1 forward pass in numpy (float64), written from BFL's flux/model.py,
flux/modules/layers.py and flux/math.py, for tests/models/flux_test.cpp.

Usage: flux_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds FLUX weights (f32, BFL names); INPUTS holds x [1, C, H, W], t [1], context
[1, L, D], y [1, V] and guidance [1], and optionally Kontext reference latents ref0, ref1, ...
[1, C, h, w] with ref_index_mode [1] (0 fixed, 1 increase, 2 decrease). OUT receives the
prediction [1, C, H, W] as raw little-endian f32.

Reference tokens follow the image's through img_in and every block; their positions are
(index, row + dy, col + dx): fixed mode gives all index 1 and places each reference beside
the ones before it (dx = the width so far when that keeps the layout squarer, else dy = the
height so far, in latent pixels), increase numbers them 1, 2, ... and decrease 0, -1, ...,
both at the origin.

INPUTS may hold `concat` [1, E, H, W], the extra input of FLUX.1 Fill (img_in of 384: the
masked-image latent's C channels then the 64 channels of the folded mask, each part
patchified on its own) or Canny / Depth (img_in of 128: the control latent); their patches
follow the latent's in each image token, as stable-diffusion.cpp's forward_flux_chroma."""
import json
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return out


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, eps=1e-6):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def rms_norm(x, scale, eps=1e-6):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * scale


def timestep_embedding(t, dim=256, max_period=10000.0, time_factor=1000.0):
    t = t * time_factor
    half = dim // 2
    freqs = np.exp(-np.log(max_period) * np.arange(half) / half)
    args = t * freqs
    return np.concatenate([np.cos(args), np.sin(args)])


def rope(pos, dim, theta):  # [L] -> [L, dim / 2, 2, 2]
    omega = 1.0 / theta ** (np.arange(0, dim, 2) / dim)
    a = pos[:, None] * omega[None, :]
    return np.stack([np.cos(a), -np.sin(a), np.sin(a), np.cos(a)], -1).reshape(len(pos), dim // 2, 2, 2)


def apply_rope(x, pe):  # x [H, L, D]
    xr = x.reshape(*x.shape[:-1], -1, 1, 2)
    return (pe[..., 0] * xr[..., 0] + pe[..., 1] * xr[..., 1]).reshape(x.shape)


def attention(q, k, v, pe, mask=None):  # [H, L, D] each -> [L, H * D]; mask: [L] on the keys
    q, k = apply_rope(q, pe), apply_rope(k, pe)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    o = s @ v
    return o.transpose(1, 0, 2).reshape(q.shape[1], -1)


def patches(v, p=2):  # [C, H, W] -> [h * w, C * p * p], padded to whole patches
    C, H, Wd = v.shape
    v = np.pad(v, ((0, 0), (0, (-H) % p), (0, (-Wd) % p)))
    h, w = v.shape[1] // p, v.shape[2] // p
    return v.reshape(C, h, p, w, p).transpose(1, 3, 0, 2, 4).reshape(h * w, C * p * p), h, w


def grid_ids(h, w, index, dy, dx):
    ids = np.zeros((h * w, 3))
    ids[:, 0] = index
    ids[:, 1] = np.repeat(np.arange(h), w) + dy
    ids[:, 2] = np.tile(np.arange(w), h) + dx
    return ids


def reference_ids(refs, mode):
    out, cur_h, cur_w, index = [], 0, 0, 1
    for r in refs:
        rh, rw = r.shape[2], r.shape[3]
        dy = dx = 0
        if mode == 0:
            if rh + cur_h > rw + cur_w:
                dx = cur_w
            else:
                dy = cur_h
        elif mode == 2:
            index -= 1
        out.append(grid_ids((rh + 1) // 2, (rw + 1) // 2, index, dy, dx))
        if mode == 1:
            index += 1
        cur_h, cur_w = max(cur_h, rh + dy), max(cur_w, rw + dx)
    return out


def flux_modulation(W, t, y, g):
    """FLUX's modulation vectors: mod(kind, i) for kind "img" / "txt" (double block i, 6
    rows), "single" (3 rows) and "final" (shift, scale), each from SiLU(vec) through the
    block's linear."""
    def linear(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    def embedder(name, v):
        return linear(name + ".out_layer", silu(linear(name + ".in_layer", v)))

    hidden = W["img_in.weight"].shape[0]
    vec = embedder("time_in", timestep_embedding(t[0]))
    if "guidance_in.in_layer.weight" in W:
        vec = vec + embedder("guidance_in", timestep_embedding(g[0]))
    vec = vec + embedder("vector_in", y[0])
    svec = silu(vec)
    names = {"img": "double_blocks.%d.img_mod.lin", "txt": "double_blocks.%d.txt_mod.lin",
             "single": "single_blocks.%d.modulation.lin", "final": "final_layer.adaLN_modulation.1"}

    def mod(kind, i=0):
        name = names[kind] % i if "%" in names[kind] else names[kind]
        return linear(name, svec).reshape(-1, hidden)
    return mod


def extra_patches(W, C, concat):  # the extra input's patches, [h * w, E * 4] each part
    if concat is None:
        return []
    if W["img_in.weight"].shape[1] == 384:  # Fill: masked-image latent, then the mask cells
        return [patches(concat[0][:C])[0], patches(concat[0][C:])[0]]
    return [patches(concat[0])[0]]  # Canny / Depth: the control latent


def forward(W, x, t, ctx, y, g, refs=(), mode=0, mod=None, mask=None, concat=None):
    """mod: the modulation vectors (flux_modulation's form; FLUX's when None); mask: [Lt]
    added to the text keys' scores, or None."""
    def linear(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    mod = mod or flux_modulation(W, t, y, g)
    C, H, Wd = x.shape[1:]
    p = 2
    tokens, h, w = patches(x[0])
    tokens = np.concatenate([tokens] + extra_patches(W, C, concat), axis=1)
    tokens = np.concatenate([tokens] + [patches(r[0])[0] for r in refs])
    img = transformer(W, linear("img_in", tokens), ctx, h, w, mod, mask, reference_ids(refs, mode))
    m = mod("final")  # shift, scale
    out = linear("final_layer.linear", (1 + m[1]) * layer_norm(img) + m[0])
    out = out.reshape(h, w, C, p, p).transpose(2, 0, 3, 1, 4).reshape(C, h * p, w * p)
    return out[:, :H, :Wd][None]


def transformer(W, img, ctx, h, w, mod, mask=None, ref_ids=()):
    """The blocks between FLUX's heads: img [h * w (+ the references'), hidden] embedded image
    tokens, ctx [1, L, D] the text; returns the image tokens' states [h * w, hidden] after the
    last single block (Chroma-Radiance's heads are its own)."""
    def linear(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    hidden = W["txt_in.weight"].shape[0]
    blocks = [k for k in W if k.endswith("norm.query_norm.scale")]
    head_dim = W[blocks[0]].shape[0]
    heads = hidden // head_dim
    depth = len({k.split(".")[1] for k in W if k.startswith("double_blocks.")})
    single = len({k.split(".")[1] for k in W if k.startswith("single_blocks.")})
    txt = linear("txt_in", ctx[0])

    lt = txt.shape[0]
    ids = np.concatenate([np.zeros((lt, 3)), grid_ids(h, w, 0, 0, 0)] + list(ref_ids))
    pe = np.concatenate([rope(ids[:, a], d, 10000.0) for a, d in enumerate([16, 56, 56])], axis=1)
    keys = None if mask is None else np.concatenate([mask, np.zeros(len(img))])

    def heads_of(v, name):  # [L, 3 hidden] -> normed q, k and v, each [H, L, D]
        q, k, vv = v.reshape(len(v), 3, heads, head_dim).transpose(1, 2, 0, 3)
        return rms_norm(q, W[name + ".query_norm.scale"]), rms_norm(k, W[name + ".key_norm.scale"]), vv

    for i in range(depth):
        b = "double_blocks.%d." % i
        im, tm = mod("img", i), mod("txt", i)
        iq, ik, iv = heads_of(linear(b + "img_attn.qkv", (1 + im[1]) * layer_norm(img) + im[0]), b + "img_attn.norm")
        tq, tk, tv = heads_of(linear(b + "txt_attn.qkv", (1 + tm[1]) * layer_norm(txt) + tm[0]), b + "txt_attn.norm")
        a = attention(np.concatenate([tq, iq], 1), np.concatenate([tk, ik], 1), np.concatenate([tv, iv], 1), pe, keys)
        img = img + im[2] * linear(b + "img_attn.proj", a[lt:])
        img = img + im[5] * linear(b + "img_mlp.2", gelu_tanh(linear(b + "img_mlp.0", (1 + im[4]) * layer_norm(img) + im[3])))
        txt = txt + tm[2] * linear(b + "txt_attn.proj", a[:lt])
        txt = txt + tm[5] * linear(b + "txt_mlp.2", gelu_tanh(linear(b + "txt_mlp.0", (1 + tm[4]) * layer_norm(txt) + tm[3])))

    xx = np.concatenate([txt, img])
    for i in range(single):
        b = "single_blocks.%d." % i
        m = mod("single", i)
        h1 = linear(b + "linear1", (1 + m[1]) * layer_norm(xx) + m[0])
        q, k, v = heads_of(h1[:, : 3 * hidden], b + "norm")
        a = attention(q, k, v, pe, keys)
        xx = xx + m[2] * linear(b + "linear2", np.concatenate([a, gelu_tanh(h1[:, 3 * hidden:])], 1))
    return xx[lt:lt + h * w]


def main():
    W = load(sys.argv[1])
    i = load(sys.argv[2])
    refs = [i["ref%d" % n] for n in range(len([k for k in i if k.startswith("ref") and k[3:].isdigit()]))]
    mode = int(i["ref_index_mode"][0]) if "ref_index_mode" in i else 0
    out = forward(W, i["x"], i["t"], i["context"], i["y"], i["guidance"], refs, mode,
                  concat=i.get("concat"))
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
