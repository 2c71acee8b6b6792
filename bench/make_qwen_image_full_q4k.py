#!/usr/bin/python3
"""Write a full-depth Qwen-Image diffusion model (60 dual-stream blocks, 3072 wide: 20.4B
parameters) and a Qwen2.5-VL-7B (28 layers, 3584 wide, with its 32-block vision tower) as q4_K
GGUF files, for the streaming-memory benchmark (bench/qwen_image_stream_rss.sh).

The tensors are those of ../shared/fixtures/manifests/qwen_image_d2.tsv and
qwen2_5_vl_7b_l2_vis2.tsv with their block 0 repeated to full depth; their values come from
mkckpt.py's generator, written as q4_K where the reference program's convert would quantize
(rows a multiple of 256, not a bias, not img_in / txt_in) and as bf16 otherwise (the writer of
make_flux_full_q8.py). The files are about 11.5 and 4.6 GB.

Usage: make_qwen_image_full_q4k.py DIT.gguf LLM.gguf [--seed 40] [--llm-seed 41]
Needs python3-numpy (/usr/bin/python3).
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_flux_full_q8 as q8  # noqa: E402  (also puts mkckpt on the path)

DIT_KEEP = ("img_in.", "txt_in.")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dit")
    ap.add_argument("llm")
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--llm-seed", type=int, default=41)
    a = ap.parse_args()
    manifests = os.path.join(q8.mkckpt.__file__.rsplit("/", 1)[0], "manifests")
    if not os.path.exists(a.dit):
        dit = q8.mkckpt.read_manifest(os.path.join(manifests, "qwen_image_d2.tsv"))
        tensors = q8.repeat_first_block(dit, "transformer_blocks", 60)
        q8.write_gguf(a.dit, tensors, "qwen_image", a.seed, keep=DIT_KEEP, quant="q4_K")
    if not os.path.exists(a.llm):
        llm = q8.mkckpt.read_manifest(os.path.join(manifests, "qwen2_5_vl_7b_l2_vis2.tsv"))
        tensors = q8.repeat_first_block(llm, "model.layers", 28)
        tensors = q8.repeat_first_block([(n, "", s) for n, s in tensors], "visual.blocks", 32)
        q8.write_gguf(a.llm, tensors, "qwen2vl", a.llm_seed, keep=(), quant="q4_K")


if __name__ == "__main__":
    main()
