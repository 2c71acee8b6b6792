#!/usr/bin/python3
"""Write a full-depth FLUX.2-dev diffusion model (8 double + 48 single blocks, 6144 wide:
32.2B parameters) and a Mistral-Small-3.2-24B text model (40 layers, 5120 wide) as q4_K GGUF
files whose data is a hole, for the streaming-memory benchmark (bench/flux2_dev_stream_rss.sh).

The tensors are those of tests/families/manifests/flux2_dev.tsv and
mistral_small_3_2_24b.tsv (the real layouts), q4_K where the reference program's convert would
quantize (rows a multiple of 256, not a scale, not the DiT's input / conditioning / output
layers) and bf16 otherwise. The Mistral file carries llama.cpp's names and metadata (as
unsloth's Mistral-Small-3.2 GGUF: architecture "llama", rope theta 1e9, 32 / 8 heads of 128,
RMS eps 1e-5). Only the headers are written: the data are holes (zeros, which q4_K and bf16
read as zero weights), so the files take no disk space (18.1 and 13.3 GB apparent) and the
run streams, maps and computes exactly what real weights would make it; the image is blank.

Usage: make_flux2_dev_sparse_q4k.py DIT.gguf LLM.gguf
Needs python3-numpy (/usr/bin/python3).
"""
import os, re, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_flux_full_q8 as q8  # noqa: E402  (also puts mkckpt on the path)

MANIFESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "families",
                         "manifests")
DIT_KEEP = ("img_in.", "txt_in.", "time_in.", "guidance_in.", "final_layer.")
LLAMA_CPP = [("model.embed_tokens", "token_embd"), ("model.norm", "output_norm"),
             ("lm_head", "output"), ("model.layers.", "blk."),
             ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
             ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
             ("input_layernorm", "attn_norm"), ("post_attention_layernorm", "ffn_norm"),
             ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")]
GGUF_U32, GGUF_F32, GGUF_STRING = 4, 6, 8


def kv(key, kind, value):
    out = q8.gguf_string(key) + struct.pack("<I", kind)
    if kind == GGUF_STRING:
        return out + q8.gguf_string(value)
    return out + struct.pack("<I" if kind == GGUF_U32 else "<f", value)


def write_sparse_gguf(out, tensors, metadata, keep):
    """TENSORS [(name, shape)] as q4_K (where quantized) or bf16, METADATA [kv(...)]; the data
    region is left a hole."""
    head = struct.pack("<IIQQ", 0x46554747, 3, len(tensors), len(metadata)) + b"".join(metadata)
    offset = 0
    for name, shape in tensors:
        kind = q8.GGML_Q4_K if q8.quantized(name, shape, keep, 256) else q8.GGML_BF16
        head += q8.gguf_string(name) + struct.pack("<I", len(shape))
        head += b"".join(struct.pack("<Q", d) for d in reversed(shape))
        head += struct.pack("<IQ", kind, offset)
        offset += (q8.nbytes(name, shape, keep, "q4_K") + q8.ALIGN - 1) // q8.ALIGN * q8.ALIGN
    head += b"\0" * ((q8.ALIGN - len(head) % q8.ALIGN) % q8.ALIGN)
    with open(out + ".part", "wb") as f:
        f.write(head)
        f.truncate(len(head) + offset)
    os.rename(out + ".part", out)
    print(f"wrote {out}: {len(tensors)} tensors, {(len(head) + offset) / 2**30:.2f} GiB (sparse)",
          file=sys.stderr)


def llama_cpp_name(name):
    for hf, llama in LLAMA_CPP:
        name = name.replace(hf, llama)
    return name


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dit_path, llm_path = sys.argv[1:]
    dit = [(n, s) for n, _, s in q8.mkckpt.read_manifest(os.path.join(MANIFESTS, "flux2_dev.tsv"))]
    write_sparse_gguf(dit_path, dit, [kv("general.architecture", GGUF_STRING, "flux")], DIT_KEEP)
    llm = q8.mkckpt.read_manifest(os.path.join(MANIFESTS, "mistral_small_3_2_24b.tsv"))
    llm = [(llama_cpp_name(n), s) for n, _, s in llm]
    metadata = [kv("general.architecture", GGUF_STRING, "llama"),
                kv("llama.rope.freq_base", GGUF_F32, 1e9),
                kv("llama.attention.head_count", GGUF_U32, 32),
                kv("llama.attention.head_count_kv", GGUF_U32, 8),
                kv("llama.attention.key_length", GGUF_U32, 128),
                kv("llama.attention.layer_norm_rms_epsilon", GGUF_F32, 1e-5)]
    write_sparse_gguf(llm_path, llm, metadata, ())


if __name__ == "__main__":
    main()
