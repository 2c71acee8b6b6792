#!/usr/bin/python3
"""Writes the manifest of an SDXL ControlNet in cldm's layout from the SDXL checkpoint's:
the UNet's time_embed, label_emb, input_blocks and middle_block under control_model., plus
input_hint_block (3 -> 16 -> 16 -> 32 -> 32 -> 96 -> 96 -> 256 -> model width), one 1x1
zero_convs.N a skip (its width from the input block) and middle_block_out.0.

usage: sdxl_controlnet_manifest.py SDXL.tsv OUT.tsv
"""
import sys

UNET = "model.diffusion_model."
KEEP = ("time_embed.", "label_emb.", "input_blocks.", "middle_block.")


def main(src, out):
    rows, shapes = [], {}
    for line in open(src):
        parts = line.rstrip("\n").split("\t")
        if not line.strip() or line.startswith("#") or not parts[0].startswith(UNET):
            continue
        name = parts[0][len(UNET):]
        shapes[name] = [int(d) for d in parts[2:] if d]
        if name.startswith(KEEP):
            rows.append(["control_model." + name] + parts[1:])
    width = shapes["input_blocks.0.0.weight"][0]
    hint = [3, 16, 16, 32, 32, 96, 96, 256, width]
    for i in range(8):
        rows.append(["control_model.input_hint_block.%d.weight" % (2 * i), "f16",
                     str(hint[i + 1]), str(hint[i]), "3", "3"])
        rows.append(["control_model.input_hint_block.%d.bias" % (2 * i), "f32", str(hint[i + 1])])
    block = 0
    while "input_blocks.%d.0.weight" % block in shapes or any(
            k.startswith("input_blocks.%d." % block) for k in shapes):
        for key in ("input_blocks.%d.0.out_layers.3.weight", "input_blocks.%d.0.op.weight",
                    "input_blocks.%d.0.weight"):
            if key % block in shapes:
                c = shapes[key % block][0]
                break
        rows.append(["control_model.zero_convs.%d.0.weight" % block, "f16", str(c), str(c), "1", "1"])
        rows.append(["control_model.zero_convs.%d.0.bias" % block, "f32", str(c)])
        block += 1
    mid = shapes["middle_block.2.out_layers.3.weight"][0]
    rows.append(["control_model.middle_block_out.0.weight", "f16", str(mid), str(mid), "1", "1"])
    rows.append(["control_model.middle_block_out.0.bias", "f32", str(mid)])
    with open(out, "w") as f:
        for r in rows:
            f.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
