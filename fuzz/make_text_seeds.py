#!/usr/bin/env python3
"""Seeds of the text-input fuzz targets (t5_tokenizer, qwen2_tokenizer, options,
server_request), small enough for -max_len: a tiny T5 vocabulary as a SentencePiece protobuf
and as a tokenizer.json, a tiny byte-level BPE as a tokenizer.json and as vocab.json +
merges.txt, option strings, and request bodies of the server's three APIs.
Usage: make_text_seeds.py OUT_DIR (writes OUT_DIR/TARGET/*)."""
import base64
import json
import os
import struct
import sys
import zlib

PROMPTS = [b"a lovely cat", b"A  (photo:1.2) of a CAT, 123!", "caf\u00e9 \u732b <|im_start|>".encode()]


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 5:
        return key + struct.pack("<f", payload)
    return key + varint(len(payload)) + payload


T5_PIECES = [("<pad>", 0.0, 3), ("</s>", 0.0, 3), ("<unk>", 0.0, 2), ("\u2581", -2.0, 1),
             ("\u2581a", -3.0, 1), ("a", -4.0, 1), ("t", -4.0, 1), ("c", -5.0, 1),
             ("\u2581cat", -6.0, 1), ("at", -5.0, 1), ("\u2581lovely", -7.0, 1)]


def spiece_model():
    out = b""
    for piece, score, kind in T5_PIECES:
        out += field(1, 2, field(1, 2, piece.encode()) + field(2, 5, score) + field(3, 0, kind))
    trainer = field(3, 0, 1) + field(40, 0, 2) + field(41, 0, 0xFFFFFFFF) + field(42, 0, 1) + \
        field(43, 0, 0)
    normalizer = field(3, 0, 1) + field(4, 0, 1) + field(5, 0, 1)
    return out + field(2, 2, trainer) + field(3, 2, normalizer)


def t5_json():
    return json.dumps({"model": {"type": "Unigram", "unk_id": 2,
                                 "vocab": [[p, s] for p, s, _ in T5_PIECES]}}).encode()


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (byte-level BPE's alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def qwen2_vocab():
    # All 256 byte tokens, then the merges' results.
    tokens = [bytes_to_unicode()[b] for b in range(256)]
    tokens += ["\u0120c", "at", "\u0120cat", "\u0120l", "ov", "el", "ely"]
    return {t: i for i, t in enumerate(tokens)}


QWEN2_MERGES = ["\u0120 c", "a t", "\u0120c at", "\u0120 l", "o v", "e l", "el y"]


def qwen2_json():
    vocab = qwen2_vocab()
    added = [{"id": len(vocab) + i, "content": c, "special": True}
             for i, c in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
    return json.dumps({"added_tokens": added, "model": {"type": "BPE", "vocab": vocab,
                                                        "merges": QWEN2_MERGES}}).encode()


def tekken_json():
    """Mistral's tekken.json: 20 named specials of 1000, the 256 bytes, 3 merged tokens."""
    names = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]",
             "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]",
             "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]",
             "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]"]
    tokens = [bytes([b]) for b in range(256)] + [b"ca", b"cat", b" cat"]
    vocab = [{"rank": r, "token_bytes": base64.b64encode(t).decode(), "token_str": None}
             for r, t in enumerate(tokens)]
    specials = [{"rank": r, "token_str": n, "is_control": True} for r, n in enumerate(names)]
    config = {"default_vocab_size": 1000 + len(tokens), "default_num_special_tokens": 1000}
    return json.dumps({"config": config, "vocab": vocab, "special_tokens": specials}).encode()


def tiny_png_b64():
    """A 2x2 RGB PNG, base64 (as the requests carry images)."""
    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload
                + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))
    rows = b"".join(b"\0" + bytes([200, 40, 30] * 2) for _ in range(2))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


def main():
    out = sys.argv[1]
    for t in ("t5_tokenizer", "qwen2_tokenizer", "options", "server_request"):
        os.makedirs(os.path.join(out, t), exist_ok=True)

    def write(target, name, data):
        with open(os.path.join(out, target, name), "wb") as f:
            f.write(data)

    for i, p in enumerate(PROMPTS):
        write("t5_tokenizer", "spiece_%d" % i, bytes([len(p)]) + p + spiece_model())
        write("t5_tokenizer", "json_%d" % i, bytes([len(p)]) + p + t5_json())
        write("qwen2_tokenizer", "json_%d" % i, b"J" + qwen2_json() + b"\0" + p)
        vocab = json.dumps(qwen2_vocab()).encode()
        merges = ("#version: 0.2\n" + "\n".join(QWEN2_MERGES) + "\n").encode()
        write("qwen2_tokenizer", "vocab_merges_%d" % i, b"V" + vocab + b"\0" + merges + b"\0" + p)
        write("qwen2_tokenizer", "tekken_%d" % i, b"T" + tekken_json() + b"\0" + p)
    options = [b"", b"chroma_use_dit_mask=true,chroma_t5_mask_pad=1\0" + b"1,1,0,0,1",
               b"qwen_image_zero_cond_t=false,compute_type=bf16\0" + b"1,0",
               b"tokenizer_dir=/tmp/x,chroma_use_t5_mask=1\0" + b"0,0,0"]
    for i, o in enumerate(options):
        write("options", "args_%d" % i, o)
    # server_request: K BODY, K choosing native img_gen (0), vid_gen (1), OpenAI (2), sdapi
    # txt2img (3), img2img (4). A 2x2 PNG for the image fields.
    png = tiny_png_b64()
    extra = ' <sd_cpp_extra_args>{"sample_params":{"sample_steps":3,"guidance":{"txt_cfg":4}}}</sd_cpp_extra_args>'
    bodies = [
        (0, {"prompt": "a cat" + extra, "width": 64, "height": 64, "seed": 5, "batch_count": 2,
             "sample_params": {"sample_method": "euler_a", "scheduler": "karras", "sample_steps": 4},
             "hires": {"enabled": True, "scale": 1.5, "upscaler": "Latent"},
             "vae_tiling_params": {"enabled": True, "tile_size_x": 32}, "cache_mode": "easycache",
             "init_image": png, "mask_image": png, "ref_images": [png], "output_format": "webp"}),
        (1, {"prompt": "a dog", "video_frames": 9, "fps": 12, "moe_boundary": 0.9, "end_image": png,
             "control_frames": [png, png], "vace_strength": 0.5, "output_format": "avi",
             "high_noise_sample_params": {"sample_steps": 2, "guidance": {"txt_cfg": 3.5, "slg": {"layers": [1]}}}}),
        (2, {"prompt": "a fox" + extra, "n": 2, "size": "64x128", "output_format": "jpeg",
             "output_compression": 50, "response_format": "b64_json"}),
        (3, {"prompt": "a bird <lora:none:0.5>", "negative_prompt": "blur", "steps": 3, "cfg_scale": 5,
             "sampler_name": "DPM++ 2M Karras", "width": 64, "height": 64, "enable_hr": True,
             "hr_scale": 2, "override_settings": {"CLIP_stop_at_last_layers": 2}}),
        (4, {"prompt": "a cow", "init_images": [png], "mask": png, "denoising_strength": 0.4,
             "inpainting_mask_invert": 1, "extra_images": [png]}),
    ]
    for i, (k, body) in enumerate(bodies):
        write("server_request", "body_%d" % i, bytes([k]) + json.dumps(body).encode())


if __name__ == "__main__":
    main()
