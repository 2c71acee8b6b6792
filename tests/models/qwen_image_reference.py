#!/usr/bin/env python3
"""An independent Qwen-Image DiT forward pass in numpy (float64), written from diffusers'
transformer_qwenimage.py (QwenImageTransformer2DModel) with stable-diffusion.cpp's token
positions (rope.hpp gen_qwen_image_ids), for tests/models/qwen_image_test.cpp.

Usage: qwen_image_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds the DiT's weights (f32, diffusers names; a `__index_timestep_zero__` tensor marks
Edit-2511's zero_cond_t; a `time_text_embed.addition_t_embedding.weight` marks Qwen-Image-Layered,
whose row 0 is added to the time embedding); INPUTS holds x [1, C, H, W] or [1, C, T, H, W]
(Layered: T frames), t [1] (sigma * 1000, embedded as given), context [1, L, D], optionally
reference latents ref0, ref1, ... [1, C, h, w] and ref_mode [1] (0: all at index 1 side by
side; 1: numbered 1, 2, ... with centred grids; 2: numbered -1, -2, ... centred). OUT receives
the prediction, shaped as x, as raw little-endian f32.

Positions (index, row, col): text token i at m + i on all three axes (m = max(h, w) // 2 in
patches); frame f's image patches at (f, r - h // 2,
c - w // 2); references as described above. With zero_cond_t the reference tokens take the
image modulation of t = 0."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flux_reference import gelu_tanh, layer_norm, load, rms_norm, silu  # noqa: E402


def sinusoid(t, dim=256):  # diffusers Timesteps(flip_sin_to_cos=True, shift 0): cos first
    half = dim // 2
    f = np.exp(-np.log(10000.0) * np.arange(half) / half)
    return np.concatenate([np.cos(t * f), np.sin(t * f)])


def rotate(x, pos, axes=(16, 56, 56), theta=10000.0):
    """x [H, L, D]: consecutive pairs (x0, x1) rotated by pos[:, a] * theta^(-2j / d_a)."""
    angles = []
    for a, d in enumerate(axes):
        omega = theta ** (-np.arange(0, d, 2) / d)
        angles.append(pos[:, a:a + 1] * omega[None, :])
    ang = np.concatenate(angles, 1)  # [L, D / 2]
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def grid(h, w, index, r0, c0):
    rows, cols = np.meshgrid(np.arange(h) + r0, np.arange(w) + c0, indexing="ij")
    return np.stack([np.full(h * w, float(index)), rows.ravel(), cols.ravel()], 1)


def positions(lt, frames, h, w, refs, mode):
    s = max(h, w) // 2 + np.arange(lt, dtype=np.float64)
    out = [np.stack([s, s, s], 1)]
    out += [grid(h, w, f, -(h // 2), -(w // 2)) for f in range(frames)]
    cur_h = cur_w = 0
    for k, r in enumerate(refs):
        rh, rw = r.shape[2], r.shape[3]
        gh, gw = (rh + 1) // 2, (rw + 1) // 2
        if mode != 0:
            index = k + 1 if mode == 1 else -(k + 1)
            out.append(grid(gh, gw, index, -(gh // 2), -(gw // 2)))
            dy = dx = 0
        else:
            dy, dx = (0, cur_w) if rh + cur_h > rw + cur_w else (cur_h, 0)
            out.append(grid(gh, gw, 1, dy, dx))
        cur_h, cur_w = max(cur_h, rh + dy), max(cur_w, rw + dx)
    return np.concatenate(out)


def to_patches(v):  # [C, H, W] -> [h * w, C * 4] (c, py, px), padded to whole patches
    C, H, W = v.shape
    v = np.pad(v, ((0, 0), (0, H % 2), (0, W % 2)))
    h, w = v.shape[1] // 2, v.shape[2] // 2
    return v.reshape(C, h, 2, w, 2).transpose(1, 3, 0, 2, 4).reshape(h * w, C * 4), h, w


def forward(W, x, t, ctx, refs, mode):
    def lin(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    hidden = W["img_in.weight"].shape[0]
    D = W["transformer_blocks.0.attn.norm_q.weight"].shape[0]
    nh = hidden // D
    depth = len({k.split(".")[1] for k in W if k.startswith("transformer_blocks.")})
    zero_cond = "__index_timestep_zero__" in W

    def temb(tv):
        e = "time_text_embed.timestep_embedder."
        out = lin(e + "linear_2", silu(lin(e + "linear_1", sinusoid(tv))))
        extra = W.get("time_text_embed.addition_t_embedding.weight")
        return out if extra is None else out + extra[0]

    emb, emb0 = temb(t[0]), temb(0.0)
    frames = x[0] if x.ndim == 5 else x[0][:, None]  # [C, T, H, W]
    toks = [to_patches(frames[:, f]) for f in range(frames.shape[1])]
    h, w = toks[0][1], toks[0][2]
    n_img = sum(tk[0].shape[0] for tk in toks)
    img = lin("img_in", np.concatenate([tk[0] for tk in toks] + [to_patches(r[0])[0] for r in refs]))
    txt = lin("txt_in", rms_norm(ctx[0], W["txt_norm.weight"]))
    lt = txt.shape[0]
    pos = positions(lt, frames.shape[1], h, w, refs, mode)
    is_ref = (np.arange(img.shape[0]) >= n_img)[:, None]

    def split(v):  # [L, H * D] -> [H, L, D]
        return v.reshape(len(v), nh, D).transpose(1, 0, 2)

    for i in range(depth):
        b = "transformer_blocks.%d." % i
        im = lin(b + "img_mod.1", silu(emb)).reshape(6, hidden)
        im0 = lin(b + "img_mod.1", silu(emb0)).reshape(6, hidden) if zero_cond else im
        tm = lin(b + "txt_mod.1", silu(emb)).reshape(6, hidden)
        pick = lambda j: np.where(is_ref, im0[j], im[j])  # per token: [Li, hidden]

        xi = layer_norm(img) * (1 + pick(1)) + pick(0)
        xt = layer_norm(txt) * (1 + tm[1]) + tm[0]
        a = b + "attn."
        q = np.concatenate([rms_norm(split(lin(a + "add_q_proj", xt)), W[a + "norm_added_q.weight"]),
                            rms_norm(split(lin(a + "to_q", xi)), W[a + "norm_q.weight"])], 1)
        k = np.concatenate([rms_norm(split(lin(a + "add_k_proj", xt)), W[a + "norm_added_k.weight"]),
                            rms_norm(split(lin(a + "to_k", xi)), W[a + "norm_k.weight"])], 1)
        v = np.concatenate([split(lin(a + "add_v_proj", xt)), split(lin(a + "to_v", xi))], 1)
        q, k = rotate(q, pos), rotate(k, pos)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(D)
        s = np.exp(s - s.max(-1, keepdims=True))
        o = (s / s.sum(-1, keepdims=True)) @ v
        o = o.transpose(1, 0, 2).reshape(-1, hidden)
        img = img + pick(2) * lin(a + "to_out.0", o[lt:])
        txt = txt + tm[2] * lin(a + "to_add_out", o[:lt])

        mi = layer_norm(img) * (1 + pick(4)) + pick(3)
        img = img + pick(5) * lin(b + "img_mlp.net.2", gelu_tanh(lin(b + "img_mlp.net.0.proj", mi)))
        mt = layer_norm(txt) * (1 + tm[4]) + tm[3]
        txt = txt + tm[5] * lin(b + "txt_mlp.net.2", gelu_tanh(lin(b + "txt_mlp.net.0.proj", mt)))

    scale, shift = lin("norm_out.linear", silu(emb)).reshape(2, hidden)
    out = lin("proj_out", layer_norm(img[:n_img]) * (1 + scale) + shift)
    C, H, Wd = x.shape[1], x.shape[-2], x.shape[-1]
    per_frame = []
    for f in range(frames.shape[1]):
        o = out[f * h * w:(f + 1) * h * w]
        o = o.reshape(h, w, C, 2, 2).transpose(2, 0, 3, 1, 4).reshape(C, 2 * h, 2 * w)
        per_frame.append(o[:, :H, :Wd])
    return np.stack(per_frame, 1)[None] if x.ndim == 5 else per_frame[0][None]


def main():
    W = load(sys.argv[1])
    inp = load(sys.argv[2])
    refs = [inp["ref%d" % i] for i in range(8) if "ref%d" % i in inp]
    mode = int(inp["ref_mode"][0]) if "ref_mode" in inp else 0
    out = forward(W, inp["x"], inp["t"], inp["context"], refs, mode)
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
