#!/usr/bin/python3
"""A tiny random T5 v1.1 encoder and its output, computed independently with numpy, for
tests/models/t5_encoder_test.cpp.

Usage: t5_reference.py OUT_DIR
Writes, into OUT_DIR:
  t5_tiny.safetensors      f32 weights, Hugging Face T5EncoderModel names (as a --t5xxl file)
  t5_tiny_comfy.safetensors the same under text_encoders.t5xxl.transformer. (single-file form)
  t5_tiny_bad.safetensors  the same with encoder.block.1.layer.1.DenseReluDense.wi_1.weight
                           one row too many
  t5_tiny_llama.safetensors the same under llama.cpp's T5 GGUF names (enc.blk.N.attn_q ...)
  t5_tiny_tied.safetensors the embedding as encoder.embed_tokens.weight, no shared.weight
  clip_like.safetensors    two tensors named as a CLIP text encoder's (not a T5)
  umt5_tiny.safetensors    a UMT5 encoder (a relative position bias in every block)
  ids.bin                  int32 token ids
  expected.bin             float32 [n, width]: the encoder's last hidden state
  umt5_expected.bin        the same for the UMT5 encoder
The formulas follow transformers' modeling_t5.py (T5LayerNorm, T5Attention with the
bidirectional relative position buckets of block 0 shared by all blocks and no 1/sqrt(d)
scaling, T5DenseGatedActDense with gelu_new), computed in float64 from float32 weights; UMT5 as
modeling_umt5.py (UMT5Attention: every block has its own relative_attention_bias).
"""
import json
import math
import os
import struct
import sys

import numpy as np

LAYERS, WIDTH, HEADS, HEAD_DIM, FFN, BUCKETS, MAX_DISTANCE, VOCAB, N = 2, 64, 4, 16, 96, 8, 128, 50, 40
EPS = 1e-6


def weights(rng, umt5=False):
    w = {"shared.weight": rng.normal(0, 1.0, (VOCAB, WIDTH))}
    inner = HEADS * HEAD_DIM
    for i in range(LAYERS):
        a = "encoder.block.%d.layer.0." % i
        f = "encoder.block.%d.layer.1." % i
        for name in "qkv":
            w[a + "SelfAttention.%s.weight" % name] = rng.normal(0, WIDTH ** -0.5, (inner, WIDTH))
        w[a + "SelfAttention.o.weight"] = rng.normal(0, inner ** -0.5, (WIDTH, inner))
        if i == 0 or umt5:
            w[a + "SelfAttention.relative_attention_bias.weight"] = rng.normal(0, 1.0, (BUCKETS, HEADS))
        w[a + "layer_norm.weight"] = rng.uniform(0.5, 1.5, (WIDTH,))
        w[f + "DenseReluDense.wi_0.weight"] = rng.normal(0, WIDTH ** -0.5, (FFN, WIDTH))
        w[f + "DenseReluDense.wi_1.weight"] = rng.normal(0, WIDTH ** -0.5, (FFN, WIDTH))
        w[f + "DenseReluDense.wo.weight"] = rng.normal(0, FFN ** -0.5, (WIDTH, FFN))
        w[f + "layer_norm.weight"] = rng.uniform(0.5, 1.5, (WIDTH,))
    w["encoder.final_layer_norm.weight"] = rng.uniform(0.5, 1.5, (WIDTH,))
    return {k: v.astype(np.float32) for k, v in w.items()}


def bucket(relative_position):
    """transformers' T5Attention._relative_position_bucket, bidirectional, in float32."""
    half = BUCKETS // 2
    out = (relative_position > 0).astype(np.int64) * half
    distance = np.abs(relative_position)
    max_exact = half // 2
    safe = np.maximum(distance, max_exact).astype(np.float32)  # the small ones are exact
    ratio = np.log(safe / np.float32(max_exact)) / np.float32(
        math.log(MAX_DISTANCE / max_exact))
    large = max_exact + (ratio * np.float32(half - max_exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    return out + np.where(distance < max_exact, distance, large)


def rms(x, weight):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * weight


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def encode(w, ids):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = w["shared.weight"][ids]
    n = len(ids)
    pos = np.arange(n)
    buckets = bucket(pos[None, :] - pos[:, None])  # [query, key]
    for i in range(LAYERS):
        a = "encoder.block.%d.layer.0." % i
        f = "encoder.block.%d.layer.1." % i
        table = a + "SelfAttention.relative_attention_bias.weight"  # UMT5: every block's own
        if table in w:
            bias = w[table][buckets].transpose(2, 0, 1)  # [heads, n, n]
        h = rms(x, w[a + "layer_norm.weight"])
        q, k, v = ((h @ w[a + "SelfAttention.%s.weight" % s].T).reshape(n, HEADS, HEAD_DIM).transpose(1, 0, 2)
                   for s in "qkv")
        scores = q @ k.transpose(0, 2, 1) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p = scores / scores.sum(axis=-1, keepdims=True)
        attn = (p @ v).transpose(1, 0, 2).reshape(n, HEADS * HEAD_DIM)
        x = x + attn @ w[a + "SelfAttention.o.weight"].T
        h = rms(x, w[f + "layer_norm.weight"])
        gated = gelu_new(h @ w[f + "DenseReluDense.wi_0.weight"].T) * (h @ w[f + "DenseReluDense.wi_1.weight"].T)
        x = x + gated @ w[f + "DenseReluDense.wo.weight"].T
    return rms(x, w["encoder.final_layer_norm.weight"])


LLAMA_CPP = [("layer.0.SelfAttention.relative_attention_bias", "attn_rel_b"),
             ("layer.0.SelfAttention.", "attn_"), ("layer.0.layer_norm", "attn_norm"),
             ("layer.1.DenseReluDense.wi_0", "ffn_gate"), ("layer.1.DenseReluDense.wi_1", "ffn_up"),
             ("layer.1.DenseReluDense.wo", "ffn_down"), ("layer.1.layer_norm", "ffn_norm"),
             ("encoder.block.", "enc.blk."), ("encoder.final_layer_norm", "enc.output_norm"),
             ("shared", "token_embd")]


def llama_cpp_name(name):
    """llama.cpp's convert_hf_to_gguf.py names of a T5 encoder tensor."""
    for hf, llama in LLAMA_CPP:
        name = name.replace(hf, llama)
    return name


def write_safetensors(path, tensors, prefix=""):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype=np.float32).tobytes()
        header[prefix + name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                                 "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # aligned data, as the safetensors library writes it
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(13)
    w = weights(rng)
    ids = rng.integers(0, VOCAB, N).astype(np.int32)
    write_safetensors(os.path.join(out, "t5_tiny.safetensors"), w)
    write_safetensors(os.path.join(out, "t5_tiny_comfy.safetensors"), w, "text_encoders.t5xxl.transformer.")
    bad = dict(w)
    bad["encoder.block.1.layer.1.DenseReluDense.wi_1.weight"] = np.zeros((FFN + 1, WIDTH), np.float32)
    write_safetensors(os.path.join(out, "t5_tiny_bad.safetensors"), bad)
    write_safetensors(os.path.join(out, "t5_tiny_llama.safetensors"), {llama_cpp_name(k): v for k, v in w.items()})
    tied = dict(w)
    tied["encoder.embed_tokens.weight"] = tied.pop("shared.weight")
    write_safetensors(os.path.join(out, "t5_tiny_tied.safetensors"), tied)
    clip = {"text_model.embeddings.token_embedding.weight": np.zeros((VOCAB, WIDTH), np.float32),
            "text_model.encoder.layers.0.mlp.fc1.weight": np.zeros((FFN, WIDTH), np.float32)}
    write_safetensors(os.path.join(out, "clip_like.safetensors"), clip)
    ids.tofile(os.path.join(out, "ids.bin"))
    encode(w, ids).astype(np.float32).tofile(os.path.join(out, "expected.bin"))
    u = weights(np.random.default_rng(14), umt5=True)
    write_safetensors(os.path.join(out, "umt5_tiny.safetensors"), u)
    encode(u, ids).astype(np.float32).tofile(os.path.join(out, "umt5_expected.bin"))


if __name__ == "__main__":
    main()
