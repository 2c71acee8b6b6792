#!/usr/bin/python3
"""Write a full-depth Z-Image-Turbo diffusion model (30 main layers + 2 refiner layers each
side, 6.15B parameters) and a Qwen3-4B LLM (36 layers, 4.0B) as q8_0 GGUF files, for the
streaming-memory benchmark (bench/zimage_stream_rss.sh).

The tensors are those of ../shared/fixtures/manifests/zimage_turbo_d2.tsv with the main layers
repeated to full depth, and those of qwen3_4b_l36.tsv as they are; their values come from
mkckpt.py's generator (same seed, same name -> same values), written as q8_0 where the
reference program's convert would quantize (rows a multiple of 32, not a bias or norm scale,
not the embedders / final layer / pad tokens) and as bf16 otherwise (the writer of
make_flux_full_q8.py). The files are about 6.5 and 4.3 GB.

Usage: make_zimage_full_q8.py DIT.gguf LLM.gguf [--seed 30] [--llm-seed 31] [--layers 30]
Needs python3-numpy (/usr/bin/python3).
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_flux_full_q8 as q8  # noqa: E402  (also puts mkckpt on the path)

DIT_KEEP = ("x_embedder.", "cap_embedder.", "t_embedder.", "final_layer.", "pad_token")
LLM_KEEP = ("norm.",)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dit")
    ap.add_argument("llm")
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--llm-seed", type=int, default=31)
    ap.add_argument("--layers", type=int, default=30)
    a = ap.parse_args()
    manifests = os.path.join(q8.mkckpt.__file__.rsplit("/", 1)[0], "manifests")
    if not os.path.exists(a.dit):
        dit = q8.mkckpt.read_manifest(os.path.join(manifests, "zimage_turbo_d2.tsv"))
        q8.write_gguf(a.dit, q8.repeat_first_block(dit, "layers", a.layers), "z_image", a.seed, keep=DIT_KEEP)
    if not os.path.exists(a.llm):
        llm = [(n, s) for n, _, s in q8.mkckpt.read_manifest(os.path.join(manifests, "qwen3_4b_l36.tsv"))]
        q8.write_gguf(a.llm, llm, "qwen3", a.llm_seed, keep=LLM_KEEP)


if __name__ == "__main__":
    main()
