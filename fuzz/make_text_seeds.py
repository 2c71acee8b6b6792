#!/usr/bin/env python3
"""Seeds of the text-input fuzz targets (t5_tokenizer, qwen2_tokenizer, options), small
enough for -max_len: a tiny T5 vocabulary as a SentencePiece protobuf and as a
tokenizer.json, a tiny byte-level BPE as a tokenizer.json and as vocab.json + merges.txt,
and option strings. Usage: make_text_seeds.py OUT_DIR (writes OUT_DIR/TARGET/*)."""
import json
import os
import struct
import sys

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


def main():
    out = sys.argv[1]
    for t in ("t5_tokenizer", "qwen2_tokenizer", "options"):
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
    options = [b"", b"chroma_use_dit_mask=true,chroma_t5_mask_pad=1\0" + b"1,1,0,0,1",
               b"qwen_image_zero_cond_t=false,compute_type=bf16\0" + b"1,0",
               b"tokenizer_dir=/tmp/x,chroma_use_t5_mask=1\0" + b"0,0,0"]
    for i, o in enumerate(options):
        write("options", "args_%d" % i, o)


if __name__ == "__main__":
    main()
