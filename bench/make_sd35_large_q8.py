#!/usr/bin/python3
"""Write a full-depth SD3.5-large MMDiT (38 joint blocks, 8B parameters) as a q8_0 GGUF, for
the streaming-memory benchmark (bench/sd35_stream_rss.sh).

The tensors are those of bench/sd35_large.tsv (derived from ../shared/fixtures/manifests/
sd3_medium.tsv: width 2432, RMS qk-norm, the last context block pre-only); their values come
from mkckpt.py's generator. Written by make_flux_full_q8.write_gguf: q8_0 where the reference
program's convert would quantize (rows a multiple of 32, not a bias, not the x/t/y/context
embedders or final_layer), bf16 otherwise; 1-D weights (the qk-norms) and pos_embed stay bf16.
About 8.6 GB.

Usage: make_sd35_large_q8.py OUT.gguf [--seed 30] [--manifest M] [--part FIRST:END]
Needs python3-numpy (/usr/bin/python3).
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_flux_full_q8 import mkckpt, write_gguf  # noqa: E402

KEEP = ("x_embedder.", "t_embedder.", "y_embedder.", "context_embedder.", "final_layer.", "pos_embed")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--manifest", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "sd35_large.tsv"))
    ap.add_argument("--part", help="FIRST:END: write only these tensors into an existing OUT.part")
    a = ap.parse_args()
    tensors = [(name, shape) for name, _, shape in mkckpt.read_manifest(a.manifest)]
    # the qk-norm weights are 1-D [64]: kept bf16 like every norm weight
    keep = KEEP + tuple(n for n, s in tensors if len(s) < 2)
    write_gguf(a.out, tensors, "sd3", a.seed, a.part, keep)


if __name__ == "__main__":
    main()
