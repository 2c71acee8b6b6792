#!/usr/bin/python3
"""Write a diffusers-layout copy of an SD 1.x single-file checkpoint (test helper).

    write_diffusers_folder.py CHECKPOINT.safetensors OUT_DIR [--tokenizer DIR]

OUT_DIR gets model_index.json, unet/diffusion_pytorch_model.safetensors,
vae/diffusion_pytorch_model.safetensors, text_encoder/model.safetensors and, with
--tokenizer, tokenizer/{vocab.json,merges.txt}. Tensor bytes are copied unchanged; only
the names change (original LDM -> diffusers, as diffusers' conversion scripts map them)
and the VAE's attention projections lose their 1x1 kernel dims, as diffusers stores them
as Linear weights. Standard library only.
"""
import json, os, re, shutil, struct, sys


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def write_safetensors(path, entries, src_path, data_start):
    """entries: list of (new_name, info, shape); bytes copied from src."""
    header, offset = {}, 0
    for name, info, shape in entries:
        b, e = info["data_offsets"]
        header[name] = {"dtype": info["dtype"], "shape": shape, "data_offsets": [offset, offset + e - b]}
        offset += e - b
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(src_path, "rb") as src, open(path, "wb") as out:
        out.write(struct.pack("<Q", len(hb)))
        out.write(hb)
        for _, info, _ in entries:
            b, e = info["data_offsets"]
            src.seek(data_start + b)
            out.write(src.read(e - b))


RESNET = [("in_layers.0.", "norm1."), ("in_layers.2.", "conv1."), ("emb_layers.1.", "time_emb_proj."),
          ("out_layers.0.", "norm2."), ("out_layers.3.", "conv2."), ("skip_connection.", "conv_shortcut.")]


def sub_prefix(rest, table):
    for a, b in table:
        if rest.startswith(a):
            return b + rest[len(a):]
    return rest


def unet_name(n):
    fixed = [("time_embed.0.", "time_embedding.linear_1."), ("time_embed.2.", "time_embedding.linear_2."),
             ("input_blocks.0.0.", "conv_in."), ("out.0.", "conv_norm_out."), ("out.2.", "conv_out.")]
    for a, b in fixed:
        if n.startswith(a):
            return b + n[len(a):]
    m = re.match(r"input_blocks\.(\d+)\.(\d+)\.(.*)", n)
    if m:
        k, part, rest = int(m[1]), int(m[2]), m[3]
        level, j = (k - 1) // 3, (k - 1) % 3
        if j == 2:  # the downsampler closing level `level`
            return f"down_blocks.{level}.downsamplers.0.conv." + rest[len("op."):]
        if part == 0:
            return f"down_blocks.{level}.resnets.{j}." + sub_prefix(rest, RESNET)
        return f"down_blocks.{level}.attentions.{j}." + rest
    m = re.match(r"middle_block\.(\d+)\.(.*)", n)
    if m:
        k, rest = int(m[1]), m[2]
        if k == 1:
            return "mid_block.attentions.0." + rest
        return f"mid_block.resnets.{k // 2}." + sub_prefix(rest, RESNET)
    m = re.match(r"output_blocks\.(\d+)\.(\d+)\.(.*)", n)
    if m:
        k, part, rest = int(m[1]), int(m[2]), m[3]
        level, j = k // 3, k % 3
        if part == 0:
            return f"up_blocks.{level}.resnets.{j}." + sub_prefix(rest, RESNET)
        if rest.startswith("conv."):  # the upsampler: part 1 or 2
            return f"up_blocks.{level}.upsamplers.0." + rest
        return f"up_blocks.{level}.attentions.{j}." + rest
    raise SystemExit(f"unmapped UNet name {n}")


def vae_name(n):
    side, rest = n.split(".", 1)
    m = re.match(r"down\.(\d+)\.block\.(\d+)\.(.*)", rest)
    if m:
        r = m[3].replace("nin_shortcut.", "conv_shortcut.")
        return f"{side}.down_blocks.{m[1]}.resnets.{m[2]}.{r}"
    m = re.match(r"down\.(\d+)\.downsample\.(.*)", rest)
    if m:
        return f"{side}.down_blocks.{m[1]}.downsamplers.0.{m[2]}"
    m = re.match(r"up\.(\d+)\.block\.(\d+)\.(.*)", rest)
    if m:
        r = m[3].replace("nin_shortcut.", "conv_shortcut.")
        return f"{side}.up_blocks.{3 - int(m[1])}.resnets.{m[2]}.{r}"
    m = re.match(r"up\.(\d+)\.upsample\.(.*)", rest)
    if m:
        return f"{side}.up_blocks.{3 - int(m[1])}.upsamplers.0.{m[2]}"
    m = re.match(r"mid\.block_(\d+)\.(.*)", rest)
    if m:
        r = m[2].replace("nin_shortcut.", "conv_shortcut.")
        return f"{side}.mid_block.resnets.{int(m[1]) - 1}.{r}"
    m = re.match(r"mid\.attn_1\.(.*)", rest)
    if m:
        r = sub_prefix(m[1], [("norm.", "group_norm."), ("q.", "to_q."), ("k.", "to_k."), ("v.", "to_v."),
                              ("proj_out.", "to_out.0.")])
        return f"{side}.mid_block.attentions.0.{r}"
    if rest.startswith("norm_out."):
        return f"{side}.conv_norm_out." + rest[len("norm_out."):]
    return n  # conv_in, conv_out, quant_conv, post_quant_conv keep their names


def main():
    args = sys.argv[1:]
    tokenizer = None
    if "--tokenizer" in args:
        i = args.index("--tokenizer")
        tokenizer = args[i + 1]
        del args[i:i + 2]
    src, out = args
    header, start = read_safetensors(src)
    parts = {"unet": [], "vae": [], "text_encoder": []}
    for name, info in header.items():
        shape = list(info["shape"])
        if name.startswith("model.diffusion_model."):
            parts["unet"].append((unet_name(name[len("model.diffusion_model."):]), info, shape))
        elif name.startswith("first_stage_model."):
            new = vae_name(name[len("first_stage_model."):])
            if ".attentions.0.to_" in new and new.endswith(".weight") and len(shape) == 4:
                shape = shape[:2]
            parts["vae"].append((new, info, shape))
        elif name.startswith("cond_stage_model.transformer."):
            parts["text_encoder"].append((name[len("cond_stage_model.transformer."):], info, shape))
    for part, entries in parts.items():
        os.makedirs(os.path.join(out, part), exist_ok=True)
        fname = "model.safetensors" if part == "text_encoder" else "diffusion_pytorch_model.safetensors"
        write_safetensors(os.path.join(out, part, fname), entries, src, start)
    index = {"_class_name": "StableDiffusionPipeline", "unet": ["diffusers", "UNet2DConditionModel"],
             "vae": ["diffusers", "AutoencoderKL"], "text_encoder": ["transformers", "CLIPTextModel"]}
    if tokenizer:
        os.makedirs(os.path.join(out, "tokenizer"), exist_ok=True)
        for f in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(tokenizer, f), os.path.join(out, "tokenizer", f))
        index["tokenizer"] = ["transformers", "CLIPTokenizer"]
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump(index, f, indent=2)


if __name__ == "__main__":
    main()
