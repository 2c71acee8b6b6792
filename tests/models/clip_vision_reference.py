#!/usr/bin/env python3
"""An independent CLIP image tower in numpy (float64), written from transformers'
modeling_clip.py (CLIPVisionEmbeddings, CLIPEncoderLayer, CLIPVisionTransformer,
CLIPVisionModelWithProjection) and stable-diffusion.cpp's clip_preprocess, for
tests/models/clip_vision_encoder_test.cpp. Also CLIP's text tower (CLIPTextTransformer: causal
attention, final layer norm), which shares the encoder layer.

Usage: clip_vision_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
INPUTS holds "mode" [1] and, by mode:
  0  the hidden states after the first `layers - (skip - 1)` layers (every layer when skip <= 0),
     no post_layernorm: "pixels" [B, 3, S, S], "heads" [1], "quick" [1] (1 quick GELU), "skip" [1];
     MODEL names vision_model.*
  1  the pooled output: post_layernorm of the class token, then visual_projection; as mode 0
  2  the preprocessing: "image" [1, 3, H, W] in [0, 1], "size" [2] (out_h, out_w); no MODEL is read
  3  the text tower: "tokens" [B, L] (as floats), "heads", "quick", "skip" (>= 1), "final_norm"
     [1]; MODEL names text_model.*
OUT receives the result, row-major, as raw little-endian f32."""
import math
import sys

import numpy as np

from flux_reference import load  # f32 safetensors reader

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)

_erf = np.vectorize(math.erf)


def layer_norm(x, p, name, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]


def linear(p, name, x):
    y = x @ p[name + ".weight"].T
    return y + p[name + ".bias"] if name + ".bias" in p else y


def activation(x, quick):
    if quick:
        return x / (1.0 + np.exp(-1.702 * x))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def attention(p, name, x, heads, causal):
    B, L, C = x.shape
    D = C // heads

    def split(t):
        return t.reshape(B, L, heads, D).transpose(0, 2, 1, 3)

    q = split(linear(p, name + ".q_proj", x))
    k = split(linear(p, name + ".k_proj", x))
    v = split(linear(p, name + ".v_proj", x))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D)
    if causal:
        s = s + np.triu(np.full((L, L), -np.inf), 1)
    s = np.exp(s - s.max(-1, keepdims=True))
    s = s / s.sum(-1, keepdims=True)
    o = (s @ v).transpose(0, 2, 1, 3).reshape(B, L, C)
    return linear(p, name + ".out_proj", o)


def encoder(p, prefix, x, heads, quick, count, causal):
    for i in range(count):
        b = "%s.encoder.layers.%d" % (prefix, i)
        x = x + attention(p, b + ".self_attn", layer_norm(x, p, b + ".layer_norm1"), heads, causal)
        h = activation(linear(p, b + ".mlp.fc1", layer_norm(x, p, b + ".layer_norm2")), quick)
        x = x + linear(p, b + ".mlp.fc2", h)
    return x


def depth(p, prefix):
    n = 0
    while "%s.encoder.layers.%d.mlp.fc1.weight" % (prefix, n) in p:
        n += 1
    return n


def run_count(layers, skip):
    return layers - (skip - 1) if skip > 0 else layers


def vision_hidden(p, pixels, heads, quick, skip):
    w = p["vision_model.embeddings.patch_embedding.weight"]  # [C_out, C_in, P, P]
    hidden, _, P, _ = w.shape
    B, C, S, _ = pixels.shape
    g = S // P
    patches = pixels.reshape(B, C, g, P, g, P).transpose(0, 2, 4, 1, 3, 5).reshape(B, g * g, -1)
    x = patches @ w.reshape(hidden, -1).T  # [B, g g, hidden], row-major patches
    cls = np.broadcast_to(p["vision_model.embeddings.class_embedding"], (B, 1, hidden))
    x = np.concatenate([cls, x], axis=1) + p["vision_model.embeddings.position_embedding.weight"]
    x = layer_norm(x, p, "vision_model.pre_layrnorm")
    count = run_count(depth(p, "vision_model"), skip)
    return encoder(p, "vision_model", x, heads, quick, count, causal=False)


def vision_pooled(p, pixels, heads, quick, skip):
    x = vision_hidden(p, pixels, heads, quick, skip)[:, 0]
    x = layer_norm(x, p, "vision_model.post_layernorm")
    return x @ p["visual_projection.weight"].T


def preprocess(image, out_h, out_w):
    """clip_preprocess: nearest scaling by the larger ratio (float32 arithmetic, sides truncated),
    centre crop, clamp to [0, 1], (x - mean) / std in float32."""
    _, _, H, W = image.shape
    scale = max(np.float32(out_w) / np.float32(W), np.float32(out_h) / np.float32(H))
    rh = max(out_h, int(np.float32(scale) * np.float32(H)))
    rw = max(out_w, int(np.float32(scale) * np.float32(W)))
    rows = np.arange(rh) * H // rh
    cols = np.arange(rw) * W // rw
    resized = image[:, :, rows][:, :, :, cols]
    top, left = (rh - out_h) // 2, (rw - out_w) // 2
    crop = np.clip(resized[:, :, top:top + out_h, left:left + out_w], 0, 1).astype(np.float32)
    return (crop - MEAN[None, :, None, None]) / STD[None, :, None, None]


def text(p, tokens, heads, quick, skip, final_norm):
    ids = tokens.astype(np.int64)
    L = ids.shape[1]
    x = p["text_model.embeddings.token_embedding.weight"][ids]
    x = x + p["text_model.embeddings.position_embedding.weight"][:L]
    count = run_count(depth(p, "text_model"), skip)
    x = encoder(p, "text_model", x, heads, quick, count, causal=True)
    return layer_norm(x, p, "text_model.final_layer_norm") if final_norm else x


def main():
    inputs = load(sys.argv[2])
    mode = int(inputs["mode"][0])
    if mode == 2:
        size = inputs["size"].astype(np.int64)
        out = preprocess(inputs["image"], int(size[0]), int(size[1]))
    else:
        p = {k: v.astype(np.float64) for k, v in load(sys.argv[1]).items()}
        heads, quick = int(inputs["heads"][0]), bool(inputs["quick"][0])
        skip = int(inputs["skip"][0])
        if mode == 3:
            out = text(p, inputs["tokens"], heads, quick, skip, bool(inputs["final_norm"][0]))
        else:
            pixels = inputs["pixels"].astype(np.float64)
            fn = vision_pooled if mode == 1 else vision_hidden
            out = fn(p, pixels, heads, quick, skip)
    np.asarray(out).astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
