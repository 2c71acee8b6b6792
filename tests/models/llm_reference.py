#!/usr/bin/python3
"""Tiny random decoder-only LLMs and their hidden states, computed independently with numpy,
for tests/models/llm_test.cpp.

Usage: llm_reference.py OUT_DIR
Writes, into OUT_DIR (f32 safetensors):
  qwen3.safetensors         a tiny Qwen3: 3 blocks, width 256, 4 query heads / 2 key-value
                            heads of head_dim 128 (not width / heads), q/k RMS norms, ffn 512,
                            vocabulary 300; Hugging Face names (model.layers.N...)
  qwen3_nested.safetensors  the same under model.language_model.* (newer transformers)
  qwen3_llama.safetensors   the same under llama.cpp's GGUF names (blk.N.attn_q ...)
  qwen3_comfy.safetensors   the same under ComfyUI's text_encoders.qwen3_4b.transformer.
  qwen3_comfy_short.safetensors  the same under text_encoders.qwen3_4b. (some all-in-one files)
  qwen3_bad.safetensors     blocks 1's mlp.up_proj one row short and block 2's k_norm missing
  qwen2.safetensors         a tiny Qwen2: 2 blocks, width 64, 4 heads / 2 KV heads of 16, q/k/v
                            biases, no q/k norms, ffn 96, vocabulary 300, rope theta 1e4
  qwen2_interleaved.safetensors  the Qwen2 under GGUF names with q/k rows (and biases)
                            permuted as llama.cpp's converter does for llama models (for
                            ggml's NORMAL, interleaved, rotation)
  mistral.safetensors       a tiny Mistral (Mistral-Small-3.2's form): 3 blocks, width 64, 4 heads /
                            2 KV heads of 32, no biases or q/k norms, RMS eps 1e-5, theta 1e9
  mistral_llama.safetensors the Mistral under GGUF names, q/k rows permuted for llama.cpp
  clip_like.safetensors     tensors named as a CLIP text encoder's
  expected.safetensors      ids [40] (token ids, as f32) and the hidden states [40, C]:
    q3_final                Qwen3's final-normed output (C = 256)
    q3_layers_1_2           the outputs of blocks 0 and 1 (not normed), side by side (512)
    q3_layers_2_4           block 1's output, then the final-normed output (512)
    q3_masked               the final-normed output with the last 8 keys masked (256)
    q2_final                Qwen2's final-normed output (64)
    q2_layer_2              Qwen2's block 1 output, not normed (64)
    m_final                 the Mistral's final-normed output (64)
    m_layers_1_2_3          its three blocks' outputs side by side (192; FLUX.2-dev's 10, 20, 30)
The formulas follow transformers' modeling_qwen3.py / modeling_qwen2.py (Qwen3RMSNorm,
rotate_half rotary embedding with inv_freq = theta^(-2i/d), repeat_kv grouped-query attention,
causal softmax(q k^T / sqrt(d)), SiLU-gated MLP), in float64 from float32 weights.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t5_reference import write_safetensors  # noqa: E402  (f32 tensors, aligned data)

EPS = 1e-6
N = 40
VOCAB = 300
QWEN3 = dict(layers=3, width=256, heads=4, kv=2, head_dim=128, ffn=512, theta=1e6,
             qk_norm=True, bias=False)
QWEN2 = dict(layers=2, width=64, heads=4, kv=2, head_dim=16, ffn=96, theta=1e4,
             qk_norm=False, bias=True)
# Mistral-Small-3.2's form (FLUX.2-dev's text encoder): no biases or q/k norms, head_dim not
# width / heads, RMS eps 1e-5, rope theta 1e9.
MISTRAL = dict(layers=3, width=64, heads=4, kv=2, head_dim=32, ffn=96, theta=1e9,
               qk_norm=False, bias=False, eps=1e-5)


def weights(rng, c):
    w = {"model.embed_tokens.weight": rng.normal(0, 1.0, (VOCAB, c["width"]))}
    q_out, kv_out, width, ffn = c["heads"] * c["head_dim"], c["kv"] * c["head_dim"], c["width"], c["ffn"]
    for i in range(c["layers"]):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = rng.uniform(0.5, 1.5, (width,))
        w[p + "post_attention_layernorm.weight"] = rng.uniform(0.5, 1.5, (width,))
        for name, out in (("q", q_out), ("k", kv_out), ("v", kv_out)):
            w[p + "self_attn.%s_proj.weight" % name] = rng.normal(0, width ** -0.5, (out, width))
            if c["bias"]:
                w[p + "self_attn.%s_proj.bias" % name] = rng.normal(0, 0.5, (out,))
        w[p + "self_attn.o_proj.weight"] = rng.normal(0, q_out ** -0.5, (width, q_out))
        if c["qk_norm"]:
            w[p + "self_attn.q_norm.weight"] = rng.uniform(0.5, 1.5, (c["head_dim"],))
            w[p + "self_attn.k_norm.weight"] = rng.uniform(0.5, 1.5, (c["head_dim"],))
        w[p + "mlp.gate_proj.weight"] = rng.normal(0, width ** -0.5, (ffn, width))
        w[p + "mlp.up_proj.weight"] = rng.normal(0, width ** -0.5, (ffn, width))
        w[p + "mlp.down_proj.weight"] = rng.normal(0, ffn ** -0.5, (width, ffn))
    w["model.norm.weight"] = rng.uniform(0.5, 1.5, (width,))
    w["lm_head.weight"] = rng.normal(0, width ** -0.5, (VOCAB, width))  # unused by an encoder
    return {k: v.astype(np.float32) for k, v in w.items()}


def rms(x, weight, eps=EPS):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope(x, theta):
    """x: [heads, n, d], positions 0..n-1 (transformers' apply_rotary_pos_emb)."""
    d = x.shape[-1]
    inv_freq = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([angles, angles], axis=-1)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def attention(w, p, c, h, key_mask):
    n = h.shape[0]
    d = c["head_dim"]

    def proj(name, heads):
        y = h @ w[p + "self_attn.%s_proj.weight" % name].T
        if c["bias"]:
            y = y + w[p + "self_attn.%s_proj.bias" % name]
        return y.reshape(n, heads, d).transpose(1, 0, 2)  # [heads, n, d]

    q, k, v = proj("q", c["heads"]), proj("k", c["kv"]), proj("v", c["kv"])
    if c["qk_norm"]:
        q = rms(q, w[p + "self_attn.q_norm.weight"])
        k = rms(k, w[p + "self_attn.k_norm.weight"])
    q, k = rope(q, c["theta"]), rope(k, c["theta"])
    group = c["heads"] // c["kv"]
    k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # repeat_kv
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    allowed = np.tril(np.ones((n, n), dtype=bool)) & (key_mask[None, :] != 0)
    scores = np.where(allowed[None], scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = scores / scores.sum(axis=-1, keepdims=True)
    out = (probs @ v).transpose(1, 0, 2).reshape(n, c["heads"] * d)
    return out @ w[p + "self_attn.o_proj.weight"].T


def hidden_states(w, c, ids, key_mask=None):
    """[embeddings, block 0's output, ..., last block's output, final-normed output]."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    if key_mask is None:
        key_mask = np.ones(len(ids))
    x = w["model.embed_tokens.weight"][ids]
    states = [x]
    for i in range(c["layers"]):
        p = "model.layers.%d." % i
        eps = c.get("eps", EPS)
        x = x + attention(w, p, c, rms(x, w[p + "input_layernorm.weight"], eps), key_mask)
        h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        silu = gate / (1.0 + np.exp(-gate))
        x = x + (silu * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        states.append(x)
    states.append(rms(x, w["model.norm.weight"], c.get("eps", EPS)))
    return states


LLAMA_CPP = [("model.embed_tokens", "token_embd"), ("model.norm", "output_norm"),
             ("lm_head", "output"), ("model.layers.", "blk."),
             ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm"),
             ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
             ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
             ("input_layernorm", "attn_norm"), ("post_attention_layernorm", "ffn_norm"),
             ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")]


def llama_cpp_name(name):
    """llama.cpp's convert_hf_to_gguf.py names of a causal-LM tensor."""
    for hf, llama in LLAMA_CPP:
        name = name.replace(hf, llama)
    return name


def permute_rows(w, heads):
    """llama.cpp's LlamaModel.permute: rotate_half row order -> interleaved pairs."""
    shape = w.shape
    return w.reshape(heads, 2, shape[0] // heads // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def write_qwen3(out, rng, ids, expected):
    w = weights(rng, QWEN3)
    write_safetensors(os.path.join(out, "qwen3.safetensors"), w)
    nested = {k.replace("model.", "model.language_model.", 1): v for k, v in w.items()}
    write_safetensors(os.path.join(out, "qwen3_nested.safetensors"), nested)
    write_safetensors(os.path.join(out, "qwen3_llama.safetensors"),
                      {llama_cpp_name(k): v for k, v in w.items()})
    write_safetensors(os.path.join(out, "qwen3_comfy.safetensors"), w,
                      "text_encoders.qwen3_4b.transformer.")
    write_safetensors(os.path.join(out, "qwen3_comfy_short.safetensors"), w,
                      "text_encoders.qwen3_4b.")
    bad = dict(w)
    bad["model.layers.1.mlp.up_proj.weight"] = bad["model.layers.1.mlp.up_proj.weight"][:-1]
    del bad["model.layers.2.self_attn.k_norm.weight"]
    write_safetensors(os.path.join(out, "qwen3_bad.safetensors"), bad)
    s = hidden_states(w, QWEN3, ids)
    expected["q3_final"] = s[-1]
    expected["q3_layers_1_2"] = np.concatenate([s[1], s[2]], axis=-1)
    expected["q3_layers_2_4"] = np.concatenate([s[2], s[4]], axis=-1)
    mask = np.ones(N)
    mask[-8:] = 0
    expected["q3_masked"] = hidden_states(w, QWEN3, ids, mask)[-1]


def write_llama_cpp(path, w, c):
    """w under llama.cpp's GGUF names with its q/k rows (and biases) permuted."""
    permuted = dict(w)
    for i in range(c["layers"]):
        for name, heads in (("q", c["heads"]), ("k", c["kv"])):
            for part in ("weight", "bias") if c["bias"] else ("weight",):
                key = "model.layers.%d.self_attn.%s_proj.%s" % (i, name, part)
                permuted[key] = permute_rows(w[key], heads)
    write_safetensors(path, {llama_cpp_name(k): v for k, v in permuted.items()})


def write_qwen2(out, rng, ids, expected):
    w = weights(rng, QWEN2)
    write_safetensors(os.path.join(out, "qwen2.safetensors"), w)
    write_llama_cpp(os.path.join(out, "qwen2_interleaved.safetensors"), w, QWEN2)
    s = hidden_states(w, QWEN2, ids)
    expected["q2_final"] = s[-1]
    expected["q2_layer_2"] = s[2]


def write_mistral(out, rng, ids, expected):
    w = weights(rng, MISTRAL)
    write_safetensors(os.path.join(out, "mistral.safetensors"), w)
    write_llama_cpp(os.path.join(out, "mistral_llama.safetensors"), w, MISTRAL)
    s = hidden_states(w, MISTRAL, ids)
    expected["m_final"] = s[-1]
    expected["m_layers_1_2_3"] = np.concatenate([s[1], s[2], s[3]], axis=-1)


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(23)
    ids = rng.integers(0, VOCAB, N).astype(np.int32)
    expected = {"ids": ids.astype(np.float32)}  # exact in f32
    write_qwen3(out, rng, ids, expected)
    write_qwen2(out, rng, ids, expected)
    write_mistral(out, rng, ids, expected)
    write_safetensors(os.path.join(out, "expected.safetensors"),
                      {k: v.astype(np.float32) for k, v in expected.items()})
    clip = {"text_model.embeddings.token_embedding.weight": np.zeros((VOCAB, 64), np.float32),
            "text_model.encoder.layers.0.mlp.fc1.weight": np.zeros((96, 64), np.float32)}
    write_safetensors(os.path.join(out, "clip_like.safetensors"), clip)


if __name__ == "__main__":
    main()
