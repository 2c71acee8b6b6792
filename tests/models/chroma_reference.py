#!/usr/bin/env python3
"""An independent Chroma forward pass in numpy (float64), written from the layout
stable-diffusion.cpp's flux.hpp reads (ChromaApproximator, get_distil_*_mod), on
flux_reference.py's FLUX forward, for tests/models/chroma_test.cpp.

Usage: chroma_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32 [table]
MODEL holds Chroma weights (f32: distilled_guidance_layer.*, FLUX's blocks without their
modulation linears); INPUTS holds x [1, C, H, W], t [1], context [1, L, D], guidance [1]
and optionally mask [L] (added to the text keys' scores). OUT receives the prediction
[1, C, H, W], or with `table` the approximator's modulation table [344, hidden], as raw
little-endian f32.

The table's rows: 3 per single block (shift, scale, gate) for 38 blocks, then 6 per double
block's image stream for 19 blocks, then 6 per double block's text stream, then the final
layer's shift and scale: the full model's layout whatever the depth."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flux_reference as flux  # noqa: E402

SINGLE, DOUBLE = 38, 19
ROWS = 3 * SINGLE + 2 * 6 * DOUBLE + 2


def embedding(t, dim):
    """The sinusoidal embedding of t * 1000 with ggml's f32 steps (expf(-logf(10000) * j /
    half), then the f32 product): the rows' indices reach 343000, where a float64 argument
    moves the cosines by up to 1e-2."""
    half = dim // 2
    j = np.arange(half, dtype=np.float32)
    e = np.float32(-np.log(np.float32(10000.0))) * j / np.float32(half)
    freqs = np.exp(e.astype(np.float64)).astype(np.float32)
    args = (np.float32(np.float32(t) * np.float32(1000.0)) * freqs).astype(np.float64)
    return np.concatenate([np.cos(args), np.sin(args)])


def approximator_input(t, g):
    index = np.stack([embedding(i, 32) for i in range(ROWS)])
    tg = np.concatenate([embedding(t, 16), embedding(g, 16)])
    return np.concatenate([np.repeat(tg[None], ROWS, 0), index], 1)


def table(W, t, g):
    def linear(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    p = "distilled_guidance_layer."
    x = linear(p + "in_proj", approximator_input(t, g))
    n = len({k.split(".")[2] for k in W if k.startswith(p + "layers.")})
    for i in range(n):
        h = flux.rms_norm(x, W[p + "norms.%d.scale" % i])
        x = x + linear(p + "layers.%d.out_layer" % i, flux.silu(linear(p + "layers.%d.in_layer" % i, h)))
    return linear(p + "out_proj", x)


def chroma_modulation(rows):
    """The rows of each block, in flux_reference's mod(kind, i) form."""
    first = {"single": lambda i: 3 * i, "img": lambda i: 3 * SINGLE + 6 * i,
             "txt": lambda i: 3 * SINGLE + 6 * DOUBLE + 6 * i, "final": lambda i: ROWS - 2}
    count = {"single": 3, "img": 6, "txt": 6, "final": 2}

    def mod(kind, i=0):
        return rows[first[kind](i):][:count[kind]]
    return mod


def main():
    W = flux.load(sys.argv[1])
    i = flux.load(sys.argv[2])
    if len(sys.argv) > 4 and sys.argv[4] == "table":
        out = table(W, i["t"][0], i["guidance"][0])
    else:
        # Chroma's approximator reads guidance 0 whatever the request's.
        mod = chroma_modulation(table(W, i["t"][0], 0.0))
        out = flux.forward(W, i["x"], i["t"], i["context"], None, i["guidance"], mod=mod,
                           mask=i.get("mask"))
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
