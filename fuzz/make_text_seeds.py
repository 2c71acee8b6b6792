#!/usr/bin/env python3
"""Seeds of the text-input fuzz targets (t5_tokenizer, qwen2_tokenizer, options,
server_request, redis_records, http_connection), small enough for -max_len: a tiny T5
vocabulary as a SentencePiece protobuf and as a tokenizer.json, a tiny byte-level BPE as a tokenizer.json and as vocab.json +
merges.txt, option strings, request bodies of the server's three APIs, the values the
Redis queue stores (RESP replies, job results, payloads, previews, heartbeats) and the bytes
of HTTP connections.
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
    for t in ("t5_tokenizer", "qwen2_tokenizer", "options", "server_request", "redis_records",
              "http_connection"):
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
    # redis_records: K BYTES, K % 5 choosing RESP replies (0; K / 5 + 1 is the piece size they
    # are fed in), a job's result (1), a worker's payload (2), a preview (3), a heartbeat (4).
    resp = [b"+OK\r\n:42\r\n$5\r\nhello\r\n$-1\r\n-LOADING Redis is loading\r\n",
            b"*2\r\n$15\r\n1700000000000-0\r\n*2\r\n$2\r\nid\r\n$8\r\njob_0001\r\n",
            b"*3\r\n$7\r\nmessage\r\n$8\r\nsdq:done\r\n$8\r\njob_0001\r\n*-1\r\n*0\r\n",
            b"*2\r\n*2\r\n:1\r\n*1\r\n$1\r\nx\r\n-ERR wrong\r\n"]
    for i, r in enumerate(resp):
        write("redis_records", "resp_%d" % i, bytes([5 * (i * 3)]) + r)
    result = [{"b64": png, "seed": 42, "parameters": "a cat\nSteps: 4", "width": 64, "height": 64,
               "frames": 0},
              {"b64": "", "seed": -1, "parameters": "", "width": 4294967295, "height": 1, "frames": 9}]
    write("redis_records", "result_0", bytes([1]) + json.dumps(result).encode())
    for i, (k, body) in enumerate(bodies):
        kind = ["native", "native_video", "openai_generation", "sdapi_txt2img", "sdapi_img2img"][k]
        write("redis_records", "payload_%d" % i,
              bytes([2]) + json.dumps({"kind": kind, "body": body, "seed": 7 + i}).encode())
    form = [{"name": "prompt", "content_b64": base64.b64encode(b"a cat").decode(), "filename": "",
             "content_type": ""},
            {"name": "image", "content_b64": png, "filename": "a.png", "content_type": "image/png"}]
    write("redis_records", "payload_edit",
          bytes([2]) + json.dumps({"kind": "openai_edit", "body": form, "seed": -1}).encode())
    write("redis_records", "preview_0", bytes([3]) + json.dumps(
        {"step": 3, "image": 1, "png": png, "width": 2, "height": 2}).encode())
    # http_connection: the bytes of one connection (requests one after another).
    def request(method, path, body=b"", headers=()):
        head = "%s %s HTTP/1.1\r\nHost: localhost\r\n" % (method, path)
        for h in headers:
            head += h + "\r\n"
        framed = any(h.lower().startswith(("transfer-encoding", "content-length")) for h in headers)
        if body and not framed:
            head += "Content-Length: %d\r\n" % len(body)
        return head.encode() + b"\r\n" + body
    small = {"prompt": "a cat", "width": 64, "height": 64, "sample_params": {"sample_steps": 1}}
    job = "job_00000001_0000000000000001"
    form_boundary = "xyzBOUNDARY"
    form = ("--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na cat\r\n"
            "--%s\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n"
            "Content-Type: image/png\r\n\r\n" % (form_boundary, form_boundary)).encode() \
        + base64.b64decode(png) + ("\r\n--%s--\r\n" % form_boundary).encode()
    chunked_body = json.dumps(small).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunked_body), chunked_body)
    connections = {
        "gets": b"".join(request("GET", p) for p in (
            "/health", "/", "/favicon.ico", "/sdcpp/v1/capabilities", "/sdapi/v1/samplers",
            "/sdapi/v1/schedulers", "/sdapi/v1/loras", "/sdapi/v1/options", "/sdapi/v1/progress",
            "/sdapi/v1/latent-upscale-modes", "/v1/models", "/sdcpp/v1/jobs/" + job)),
        "native_async": request("POST", "/sdcpp/v1/img_gen", json.dumps(small).encode(),
                                ["Content-Type: application/json"])
        + request("POST", "/sdcpp/v1/jobs/%s/cancel" % job),
        "native_video": request("POST", "/sdcpp/v1/vid_gen", json.dumps(
            {"prompt": "a dog", "video_frames": 5, "width": 64, "height": 64}).encode()),
        "openai": request("POST", "/v1/images/generations", json.dumps(
            {"prompt": "a fox", "size": "64x64", "n": 1}).encode(),
            ["Content-Type: application/json"]),
        "openai_edit": request("POST", "/v1/images/edits", form,
                               ["Content-Type: multipart/form-data; boundary=" + form_boundary]),
        "sdapi": request("POST", "/sdapi/v1/txt2img", json.dumps(
            {"prompt": "a bird", "steps": 1, "width": 64, "height": 64}).encode())
        + request("POST", "/sdapi/v1/img2img", json.dumps(
            {"prompt": "a cow", "init_images": [png], "steps": 1}).encode())
        + request("POST", "/sdapi/v1/options", b'{"sd_model_checkpoint":"x"}')
        + request("POST", "/sdapi/v1/interrupt")
        + request("POST", "/sdapi/v1/extra-single-image", json.dumps({"image": png}).encode()),
        "chunked": request("POST", "/sdcpp/v1/img_gen", chunked, ["Transfer-Encoding: chunked"]),
        "options_and_close": request("OPTIONS", "/v1/images/generations",
                                     headers=["Access-Control-Request-Method: POST"])
        + request("GET", "/health", headers=["Connection: close"]),
        "cut_short": request("POST", "/sdapi/v1/txt2img", b'{"prompt": "a', ["Content-Length: 99"]),
        "range_and_expect": request("GET", "/", headers=["Range: bytes=0-10,20-"])
        + request("POST", "/sdcpp/v1/img_gen", json.dumps(small).encode(), ["Expect: 100-continue"]),
    }
    for name, data in connections.items():
        write("http_connection", name, data)
    write("redis_records", "heartbeat_0", bytes([4]) + json.dumps(
        {"name": "host:12:ab", "model": "sd15", "pid": 12, "job": "job_0001"}).encode())


if __name__ == "__main__":
    main()
