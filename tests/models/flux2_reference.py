#!/usr/bin/env python3
"""An independent FLUX.2 forward pass in numpy (float64), written from BFL's flux2 model
(shared modulations, SiLU-gated MLPs, no biases, 4-axis RoPE), for tests/models/flux2_test.cpp.

Usage: flux2_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds FLUX.2 weights (f32, BFL names; dev's guidance_in when present); INPUTS holds x
[1, C, h, w] (the patched latent, one token a pixel), t [1], context [1, L, D], guidance [1]
(dev) and optionally reference latents ref0, ref1, ...
[1, C, h', w']. OUT receives the velocity [1, C, h, w] as raw little-endian f32.

Positions: text token i at (0, 0, 0, i), image pixel (r, c) at (0, r, c, 0), pixel (r, c) of
the k-th reference (k from 1) at (10 k, r, c, 0); axes of 32 values each, theta 2000."""
import sys

import numpy as np

from flux_reference import load as read_safetensors  # f32 safetensors as float64 arrays

THETA = 2000.0
AXES = (32, 32, 32, 32)


def sigmoid_linear(v):
    return v * (1.0 / (1.0 + np.exp(-v)))


def swiglu(v):
    half = v.shape[-1] // 2
    return sigmoid_linear(v[..., :half]) * v[..., half:]


def norm_no_affine(v):
    centred = v - v.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-6)


def rms(v, gain):
    return gain * v / np.sqrt((v * v).mean(axis=-1, keepdims=True) + 1e-6)


def time_features(t):
    t = 1000.0 * t
    freqs = np.exp(-np.log(10000.0) * np.arange(128) / 128.0)
    return np.concatenate([np.cos(t * freqs), np.sin(t * freqs)])


def angles(ids):  # [L, 4] -> [L, 64]: each axis' angles, the axes one after another
    parts = []
    for axis, width in enumerate(AXES):
        inv = THETA ** (-np.arange(0, width, 2) / width)
        parts.append(np.outer(ids[:, axis], inv))
    return np.concatenate(parts, axis=1)


def rotate(v, ang):  # v [heads, L, D]: pairs (2p, 2p + 1) turned by ang[:, p]
    even, odd = v[..., 0::2], v[..., 1::2]
    c, s = np.cos(ang)[None], np.sin(ang)[None]
    out = np.empty_like(v)
    out[..., 0::2] = c * even - s * odd
    out[..., 1::2] = s * even + c * odd
    return out


def attend(q, k, v, ang):  # [heads, L, D] -> [L, heads * D]
    q, k = rotate(q, ang), rotate(k, ang)
    logits = np.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1])
    logits = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    p = p / p.sum(axis=-1, keepdims=True)
    out = np.einsum("hqk,hkd->qhd", p, v)
    return out.reshape(out.shape[0], -1)


def image_ids(h, w, index):
    r, c = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    ids = np.zeros((h * w, 4))
    ids[:, 0] = index
    ids[:, 1] = r.reshape(-1)
    ids[:, 2] = c.reshape(-1)
    return ids


class Flux2:
    def __init__(self, weights):
        self.w = weights
        self.width = weights["img_in.weight"].shape[0]
        self.head_dim = weights["double_blocks.0.img_attn.norm.query_norm.scale"].shape[0]
        self.heads = self.width // self.head_dim
        self.n_double = len({k.split(".")[1] for k in weights if k.startswith("double_blocks.")})
        self.n_single = len({k.split(".")[1] for k in weights if k.startswith("single_blocks.")})

    def lin(self, name, v):
        return v @ self.w[name + ".weight"].T

    def split_heads(self, v, norm):
        L = v.shape[0]
        q, k, val = (v[:, i * self.width:(i + 1) * self.width].reshape(L, self.heads, self.head_dim)
                     .transpose(1, 0, 2) for i in range(3))
        return rms(q, self.w[norm + ".query_norm.scale"]), rms(k, self.w[norm + ".key_norm.scale"]), val

    def double(self, i, img, txt, mi, mt, ang):
        b = "double_blocks.%d." % i
        iq, ik, iv = self.split_heads(self.lin(b + "img_attn.qkv", norm_no_affine(img) * (1 + mi[1]) + mi[0]), b + "img_attn.norm")
        tq, tk, tv = self.split_heads(self.lin(b + "txt_attn.qkv", norm_no_affine(txt) * (1 + mt[1]) + mt[0]), b + "txt_attn.norm")
        cat = lambda a, c: np.concatenate([a, c], axis=1)
        a = attend(cat(tq, iq), cat(tk, ik), cat(tv, iv), ang)
        n = txt.shape[0]
        img = img + mi[2] * self.lin(b + "img_attn.proj", a[n:])
        img = img + mi[5] * self.lin(b + "img_mlp.2", swiglu(self.lin(b + "img_mlp.0", norm_no_affine(img) * (1 + mi[4]) + mi[3])))
        txt = txt + mt[2] * self.lin(b + "txt_attn.proj", a[:n])
        txt = txt + mt[5] * self.lin(b + "txt_mlp.2", swiglu(self.lin(b + "txt_mlp.0", norm_no_affine(txt) * (1 + mt[4]) + mt[3])))
        return img, txt

    def single(self, i, x, ms, ang):
        b = "single_blocks.%d." % i
        h = self.lin(b + "linear1", norm_no_affine(x) * (1 + ms[1]) + ms[0])
        q, k, v = self.split_heads(h[:, :3 * self.width], b + "norm")
        both = np.concatenate([attend(q, k, v, ang), swiglu(h[:, 3 * self.width:])], axis=1)
        return x + ms[2] * self.lin(b + "linear2", both)

    def __call__(self, x, t, ctx, refs, guidance=None):
        C, h, w = x.shape[1:]
        tokens = [x[0].reshape(C, -1).T] + [r[0].reshape(C, -1).T for r in refs]
        img = self.lin("img_in", np.concatenate(tokens))
        txt = self.lin("txt_in", ctx[0])
        vec = self.lin("time_in.out_layer", sigmoid_linear(self.lin("time_in.in_layer", time_features(t[0]))))
        if "guidance_in.in_layer.weight" in self.w:  # dev: the distilled guidance, embedded as t is
            g = self.lin("guidance_in.in_layer", time_features(guidance[0]))
            vec = vec + self.lin("guidance_in.out_layer", sigmoid_linear(g))
        s = sigmoid_linear(vec)
        mi = self.lin("double_stream_modulation_img.lin", s).reshape(6, self.width)
        mt = self.lin("double_stream_modulation_txt.lin", s).reshape(6, self.width)
        ms = self.lin("single_stream_modulation.lin", s).reshape(3, self.width)
        n = txt.shape[0]
        text_ids = np.zeros((n, 4))
        text_ids[:, 3] = np.arange(n)
        ids = [text_ids, image_ids(h, w, 0)]
        ids += [image_ids(r.shape[2], r.shape[3], 10 * (k + 1)) for k, r in enumerate(refs)]
        ang = angles(np.concatenate(ids))
        for i in range(self.n_double):
            img, txt = self.double(i, img, txt, mi, mt, ang)
        x_all = np.concatenate([txt, img])
        for i in range(self.n_single):
            x_all = self.single(i, x_all, ms, ang)
        fm = self.lin("final_layer.adaLN_modulation.1", s).reshape(2, self.width)
        out = self.lin("final_layer.linear", norm_no_affine(x_all[n:n + h * w]) * (1 + fm[1]) + fm[0])
        return out.T.reshape(1, C, h, w)


def main():
    model = Flux2(read_safetensors(sys.argv[1]))
    inputs = read_safetensors(sys.argv[2])
    refs = []
    while "ref%d" % len(refs) in inputs:
        refs.append(inputs["ref%d" % len(refs)])
    out = model(inputs["x"], inputs["t"], inputs["context"], refs, inputs.get("guidance"))
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
