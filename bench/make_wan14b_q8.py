#!/usr/bin/python3
"""Write a full-size Wan 2.1 14B text-to-video diffusion model (40 blocks, 5120 wide, 40 heads,
feed-forward 13824: 14.3B parameters) as a q8_0 GGUF file, for the streaming-memory benchmark
(bench/wan14b_stream_rss.sh).

The tensors are those of ../shared/fixtures/manifests/wan21_t2v_1_3b.tsv with its block 0
repeated to 40 blocks and its widths scaled to the 14B's (1536 -> 5120, 8960 -> 13824, the
time projection's 6 x 1536 -> 6 x 5120); their values come from mkckpt.py's generator, written
as q8_0 where the reference program's convert would quantize (rows a multiple of 32, not a
bias, norm scale or modulation, not the embedders or the head) and as bf16 otherwise (the writer of
make_flux_full_q8.py). The file is about 15 GB.

Usage: make_wan14b_q8.py DIT.gguf [--seed 40] [--blocks 40]
Needs python3-numpy (/usr/bin/python3).
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_flux_full_q8 as q8  # noqa: E402  (also puts mkckpt on the path)

KEEP = ("patch_embedding", "modulation", "text_embedding.", "time_embedding.", "time_projection.", "head.")
WIDTHS = {1536: 5120, 8960: 13824, 9216: 6 * 5120}  # 1.3B -> 14B


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dit")
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--blocks", type=int, default=40)
    a = ap.parse_args()
    manifests = os.path.join(q8.mkckpt.__file__.rsplit("/", 1)[0], "manifests")
    dit = q8.mkckpt.read_manifest(os.path.join(manifests, "wan21_t2v_1_3b.tsv"))
    q8.write_gguf(a.dit, q8.repeat_first_block(dit, "blocks", a.blocks, WIDTHS), "wan", a.seed, keep=KEEP)


if __name__ == "__main__":
    main()
